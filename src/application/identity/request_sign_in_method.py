"""Add a sign-in method: a signed-in identity proves a new identifier with a code (SPEC §10)."""

from __future__ import annotations

from uuid import UUID

import attrs

from application.identity.challenge_issuer import ChallengeIssuer, ChallengeReceipt
from application.identity.errors import RateLimited
from application.identity.inputs import parse_identifier
from application.identity.ports import IdentityTransactions
from application.identity.request_limits import RequestLimits
from application.ports import Clock, Telemetry
from domain.destinations import mask
from domain.purposes import Purpose

ROUTE = "sign_in_method"


@attrs.frozen(kw_only=True)
class RequestSignInMethodCommand:
    """The signed-in identity and the identifier it wants to add."""

    identity_id: UUID
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
        """Open or resend the challenge; raises InvalidField or RateLimited."""
        identifier = parse_identifier(command.identifier)
        now = self.clock.now()
        await self.limits.client(ROUTE, command.client_address, now)
        wait = await self.limits.destination(identifier, now)
        if wait is not None:
            raise RateLimited(wait)
        # Drawn and hashed up front, so a taken identifier costs the same work (no timing tell).
        drawn = await self.issuer.new_code()
        async with self.transactions.begin() as uow:
            account = await uow.identity.find_account(identifier.value)
            if account is not None and account.identifier.is_verified:
                # The same event as a free identifier (see request_sign_up).
                self.telemetry.event(
                    "identity.sign_in_method.requested",
                    known=True,
                    identity_id=str(command.identity_id),
                    destination=mask(identifier.value),
                )
                return ChallengeReceipt(challenge_expires_at=now + self.issuer.policy.lifetime)
            challenge = await self.issuer.issue(
                uow,
                purpose=Purpose.ADD_SIGN_IN_METHOD,
                identity_id=command.identity_id,
                identifier=identifier,
                now=now,
                drawn=drawn,
            )
            await uow.commit()
        self.telemetry.event(
            "identity.sign_in_method.requested",
            known=False,
            challenge_id=str(challenge.id),
            destination=mask(identifier.value),
        )
        return ChallengeReceipt(challenge_expires_at=challenge.expires_at)
