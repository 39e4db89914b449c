"""Add a sign-in method: a signed-in identity proves a new identifier with a code.

It needs a fresh step-up: a bearer token alone, stolen, must not let its thief
attach an address of their own and reset the password through it.
"""

from __future__ import annotations

import attrs

from outbox.application.identity.challenge_issuer import ChallengeIssuer, ChallengeReceipt
from outbox.application.identity.elevations import is_elevated
from outbox.application.identity.errors import RateLimited, StepUpRequired
from outbox.application.identity.inputs import parse_identifier
from outbox.application.identity.ports import IdentityTransactions
from outbox.application.identity.principal import Principal
from outbox.application.identity.request_limits import RequestLimits
from outbox.application.ports import Clock, Telemetry
from outbox.domain.destinations import mask
from outbox.domain.purposes import Purpose

ROUTE = "sign_in_method"


@attrs.frozen(kw_only=True)
class RequestSignInMethodCommand:
    """The signed-in caller, its elevation token and the identifier it wants to add."""

    principal: Principal
    elevation_token: str | None = attrs.field(repr=False)
    identifier: str = attrs.field(repr=False)
    client_address: str = attrs.field(repr=False)


@attrs.frozen(kw_only=True)
class RequestSignInMethod:
    """Opens (or resends) an add-sign-in-method challenge and enqueues its code.

    An identifier some identity already holds verified gets the same answer and no
    message: the route never says whether an identifier exists.
    """

    transactions: IdentityTransactions
    issuer: ChallengeIssuer
    limits: RequestLimits
    clock: Clock
    telemetry: Telemetry

    async def __call__(self, command: RequestSignInMethodCommand) -> ChallengeReceipt:
        """Open or resend the challenge; raises InvalidField, StepUpRequired or RateLimited."""
        identifier = parse_identifier(command.identifier)
        now = self.clock.now()
        identity_id = command.principal.identity_id
        await self.limits.client(ROUTE, command.client_address, now)
        async with self.transactions.begin() as uow:
            elevated = await is_elevated(
                uow.identity, command.principal, command.elevation_token, now
            )
        if not elevated:
            raise StepUpRequired
        wait = await self.limits.destination(identifier, now)
        if wait is not None:
            raise RateLimited(wait)
        # Drawn and hashed up front, so a taken identifier costs the same work (no timing tell).
        drawn = await self.issuer.new_code()
        async with self.transactions.begin() as uow:
            account = await uow.identity.find_account(identifier.value)
            if account is not None and account.identifier.is_verified:
                # The same event, with the same fields, as a free identifier.
                self.telemetry.event(
                    "identity.sign_in_method.requested",
                    identity_id=str(identity_id),
                    destination=mask(identifier.value),
                )
                return ChallengeReceipt(challenge_expires_at=now + self.issuer.policy.lifetime)
            challenge = await self.issuer.issue(
                uow,
                purpose=Purpose.ADD_SIGN_IN_METHOD,
                identity_id=identity_id,
                identifier=identifier,
                now=now,
                drawn=drawn,
            )
            await uow.commit()
        self.telemetry.event(
            "identity.sign_in_method.requested",
            identity_id=str(identity_id),
            destination=mask(identifier.value),
        )
        return ChallengeReceipt(challenge_expires_at=challenge.expires_at)
