"""Step up: a signed-in identity asks for a code to its first verified identifier."""

from __future__ import annotations

import attrs

from outbox.application.identity.challenge_issuer import ChallengeIssuer, ChallengeReceipt
from outbox.application.identity.errors import RateLimited, Unauthenticated
from outbox.application.identity.ports import IdentityTransactions
from outbox.application.identity.principal import Principal
from outbox.application.identity.request_limits import RequestLimits
from outbox.application.ports import Clock, Telemetry
from outbox.domain.destinations import mask
from outbox.domain.identity.identifiers import Identifier
from outbox.domain.purposes import Purpose

ROUTE = "step_up"


@attrs.frozen(kw_only=True)
class RequestStepUpCommand:
    """The signed-in caller."""

    principal: Principal
    client_address: str = attrs.field(repr=False)


@attrs.frozen(kw_only=True)
class RequestStepUp:
    """Opens (or resends) a step-up challenge; the code is only enqueued, so nothing is sent
    before the challenge commits (a code sent first is useless if the commit fails)."""

    transactions: IdentityTransactions
    issuer: ChallengeIssuer
    limits: RequestLimits
    clock: Clock
    telemetry: Telemetry

    async def __call__(self, command: RequestStepUpCommand) -> ChallengeReceipt:
        """Open or resend the challenge; raises RateLimited or Unauthenticated."""
        now = self.clock.now()
        identity_id = command.principal.identity_id
        await self.limits.client(ROUTE, command.client_address, now)
        wait = await self.limits.account(identity_id, now)
        if wait is not None:
            raise RateLimited(wait)
        drawn = await self.issuer.new_code()  # hashed before the transaction opens
        async with self.transactions.begin() as uow:
            verified = await uow.identity.find_verified_identifiers(identity_id)
            if not verified:
                raise Unauthenticated
            login = verified[0]
            identifier = Identifier(login.value, login.channel)
            challenge = await self.issuer.issue(
                uow,
                purpose=Purpose.STEP_UP,
                identity_id=identity_id,
                identifier=identifier,
                now=now,
                match_identifier=False,
                drawn=drawn,
            )
            await uow.commit()
        self.telemetry.event(
            "identity.step_up.requested",
            challenge_id=str(challenge.id),
            destination=mask(identifier.value),
        )
        return ChallengeReceipt(challenge_expires_at=challenge.expires_at)
