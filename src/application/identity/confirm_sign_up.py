"""Confirm a sign-up: the right code verifies the identifier and consumes the challenge."""

from __future__ import annotations

import attrs

from application.identity.challenge_answers import ChallengeAnswers
from application.identity.errors import IdentifierTaken
from application.identity.inputs import parse_identifier
from application.identity.ports import IdentityTransactions
from application.identity.request_limits import RequestLimits
from application.ports import Clock, Telemetry
from domain.destinations import mask
from domain.purposes import Purpose

ROUTE = "sign_up_confirmation"


@attrs.frozen(kw_only=True)
class ConfirmSignUpCommand:
    """The identifier signed up with and the code it received."""

    identifier: str = attrs.field(repr=False)
    code: str = attrs.field(repr=False)
    client_address: str = attrs.field(repr=False)


@attrs.frozen(kw_only=True)
class ConfirmSignUp:
    """Verifies the identifier; its unsent messages are cancelled (``challenge_consumed``)."""

    transactions: IdentityTransactions
    answers: ChallengeAnswers
    limits: RequestLimits
    clock: Clock
    telemetry: Telemetry

    async def __call__(self, command: ConfirmSignUpCommand) -> None:
        """Confirm; raises InvalidField, InvalidCode, IdentifierTaken or RateLimited."""
        identifier = parse_identifier(command.identifier)
        now = self.clock.now()
        await self.limits.client(ROUTE, command.client_address, now)
        async with self.transactions.begin() as uow:
            challenge = await uow.identity.find_challenge(
                purpose=Purpose.SIGN_UP, identity_id=None, identifier=identifier.value
            )
            consumed = await self.answers.consume(uow, challenge, command.code, now)
            account = await uow.identity.find_account(identifier.value)
            if account is None or account.identity_id != consumed.identity_id:
                raise IdentifierTaken
            await uow.identity.save_login_identifier(account.identifier.verify(now))
            await uow.commit()
        self.telemetry.event(
            "identity.sign_up.confirmed",
            identity_id=str(consumed.identity_id),
            destination=mask(identifier.value),
        )
