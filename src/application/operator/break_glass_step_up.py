"""Break glass: the database operator hands a staff member a step-up code
(``outboxctl staff step-up EMAIL --reason``).

Staff step-up codes are outbox messages, so with the email provider paused (or down) no
code can arrive, and the console, which would resume it, needs a step-up. The database
operator, who could change any table anyway, opens the staff member's step-up challenge with
a code shown once on the operator's terminal and never sent or stored in clear; the staff
member types it on the console's step-up page as usual. Audited with the reason.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import attrs

from outbox.application.identity.challenge_issuer import ChallengeIssuer
from outbox.application.identity.inputs import parse_email
from outbox.application.operator.ports import OperatorStore
from outbox.application.ports import Clock, Telemetry
from outbox.application.staff import check_reason


@attrs.frozen(kw_only=True)
class BreakGlassCommand:
    """The staff member's sign-in e-mail and why the glass is broken."""

    email: str = attrs.field(repr=False)
    reason: str


@attrs.frozen(kw_only=True)
class BreakGlassCode:
    """The code to read to the staff member (never logged), and until when it serves."""

    identity_id: UUID
    code: str = attrs.field(repr=False)
    expires_at: datetime


@attrs.frozen(kw_only=True)
class BreakGlassStepUp:
    """Opens the staff member's step-up challenge with a fresh code; nothing is sent."""

    store: OperatorStore
    issuer: ChallengeIssuer
    clock: Clock
    telemetry: Telemetry

    async def __call__(self, command: BreakGlassCommand) -> BreakGlassCode:
        """The code; raises InvalidField, StaffIdentityNotFound, NotStaff or PermissionDenied
        (only the database operator may)."""
        email = parse_email(command.email).value
        reason = check_reason(command.reason)
        code, code_hash = await self.issuer.new_code()
        now = self.clock.now()
        expires_at = now + self.issuer.policy.lifetime
        identity_id = await self.store.break_glass_step_up(
            email=email,
            challenge_id=self.issuer.ids.new_id(),
            code_hash=code_hash,
            expires_at=expires_at,
            reason=reason,
        )
        self.telemetry.event(
            "operator.staff.break_glass_step_up", level="warning", identity_id=str(identity_id)
        )
        return BreakGlassCode(identity_id=identity_id, code=code, expires_at=expires_at)
