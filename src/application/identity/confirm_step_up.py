"""Confirm a step-up: the right code grants a short-lived elevation token for the session."""

from __future__ import annotations

from datetime import datetime, timedelta

import attrs

from outbox.application.identity.challenge_answers import ChallengeAnswers
from outbox.application.identity.ports import IdentityTransactions
from outbox.application.identity.principal import Principal
from outbox.application.identity.request_limits import RequestLimits
from outbox.application.ports import Clock, Ids, SecretSource, Telemetry
from outbox.domain.identity.sessions import Elevation
from outbox.domain.identity.tokens import token_digest
from outbox.domain.purposes import Purpose

ROUTE = "step_up_confirmation"


@attrs.frozen(kw_only=True)
class ElevationGrant:
    """An elevation token (shown once, stored only as a digest) and when it stops working."""

    token: str = attrs.field(repr=False)
    expires_at: datetime


@attrs.frozen(kw_only=True)
class ConfirmStepUpCommand:
    """The signed-in caller and the code it received."""

    principal: Principal
    code: str = attrs.field(repr=False)
    client_address: str = attrs.field(repr=False)


@attrs.frozen(kw_only=True)
class ConfirmStepUp:
    """Consumes the step-up challenge and grants an elevation bound to the caller's session."""

    transactions: IdentityTransactions
    answers: ChallengeAnswers
    secrets: SecretSource
    limits: RequestLimits
    clock: Clock
    ids: Ids
    telemetry: Telemetry
    lifetime: timedelta = timedelta(minutes=5)

    async def __call__(self, command: ConfirmStepUpCommand) -> ElevationGrant:
        """Confirm; raises InvalidCode or RateLimited."""
        now = self.clock.now()
        principal = command.principal
        await self.limits.client(ROUTE, command.client_address, now)
        async with self.transactions.begin() as uow:
            challenge = await uow.identity.find_challenge(
                purpose=Purpose.STEP_UP, identity_id=principal.identity_id, identifier=None
            )
            consumed = await self.answers.consume(uow, challenge, command.code, now)
            token = self.secrets.token()
            elevation = Elevation.grant(
                id=self.ids.new_id(),
                session_id=principal.session_id,
                identity_id=principal.identity_id,
                session_expires_at=principal.session_expires_at,
                token_digest=token_digest(token),
                now=now,
                lifetime=self.lifetime,
            )
            await uow.identity.add_elevation(elevation, challenge_id=consumed.id)
            await uow.commit()
        self.telemetry.event(
            "identity.step_up.elevated",
            identity_id=str(principal.identity_id),
            session_id=str(principal.session_id),
        )
        return ElevationGrant(token=token, expires_at=elevation.expires_at)
