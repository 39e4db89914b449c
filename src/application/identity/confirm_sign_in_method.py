"""Confirm an added sign-in method: the right code attaches the identifier, verified, and
appends ``identity.sign_in_method_added``; the identity.security_notices consumer then tells
the identifiers verified before it."""

from __future__ import annotations

from uuid import UUID

import attrs

from outbox.application.identity.challenge_answers import ChallengeAnswers
from outbox.application.identity.errors import IdentifierTaken
from outbox.application.identity.inputs import parse_identifier
from outbox.application.identity.ports import IdentityTransactions
from outbox.application.identity.request_limits import RequestLimits
from outbox.application.ports import Clock, Telemetry
from outbox.domain.destinations import mask
from outbox.domain.identity.account_events import sign_in_method_added
from outbox.domain.identity.identities import LoginIdentifier
from outbox.domain.purposes import Purpose

ROUTE = "sign_in_method_confirmation"


@attrs.frozen(kw_only=True)
class ConfirmSignInMethodCommand:
    """The signed-in identity, the identifier being added and the code it received."""

    identity_id: UUID
    identifier: str = attrs.field(repr=False)
    code: str = attrs.field(repr=False)
    client_address: str = attrs.field(repr=False)


@attrs.frozen(kw_only=True)
class ConfirmSignInMethod:
    """Adds the identifier to the identity, verified; unsent messages are cancelled."""

    transactions: IdentityTransactions
    answers: ChallengeAnswers
    limits: RequestLimits
    clock: Clock
    telemetry: Telemetry

    async def __call__(self, command: ConfirmSignInMethodCommand) -> None:
        """Confirm; raises InvalidField, InvalidCode, IdentifierTaken or RateLimited."""
        identifier = parse_identifier(command.identifier)
        now = self.clock.now()
        await self.limits.client(ROUTE, command.client_address, now)
        async with self.transactions.begin() as uow:
            challenge = await uow.identity.find_challenge(
                purpose=Purpose.ADD_SIGN_IN_METHOD,
                identity_id=command.identity_id,
                identifier=identifier.value,
            )
            challenge_id = (await self.answers.consume(uow, challenge, command.code, now)).id
            account = await uow.identity.find_account(identifier.value)
            if account is not None and account.identifier.is_verified:
                if account.identity_id == command.identity_id:
                    await uow.commit()
                    return
                raise IdentifierTaken
            await uow.identity.save_login_identifier(
                LoginIdentifier(
                    value=identifier.value,
                    channel=identifier.channel,
                    identity_id=command.identity_id,
                    created_at=now,
                    verified_at=now,
                )
            )
            await uow.events.append(
                sign_in_method_added(
                    identity_id=command.identity_id,
                    challenge_id=challenge_id,
                    channel=identifier.channel,
                    masked_identifier=mask(identifier.value),
                    now=now,
                )
            )
            await uow.commit()
        self.telemetry.event(
            "identity.sign_in_method.added",
            identity_id=str(command.identity_id),
            destination=mask(identifier.value),
        )
