"""Revoke the staff membership of a verified e-mail's identity (``outboxctl staff revoke``)."""

from __future__ import annotations

import attrs

from outbox.application.identity.inputs import parse_email
from outbox.application.operator.ports import OperatorStore
from outbox.application.operator.views import StaffChange
from outbox.application.ports import Telemetry


@attrs.frozen(kw_only=True)
class RevokeStaffCommand:
    """The e-mail address the staff member signs in with."""

    email: str = attrs.field(repr=False)


@attrs.frozen(kw_only=True)
class RevokeStaff:
    """Revokes at once: the member's next staff call is refused at the database."""

    store: OperatorStore
    telemetry: Telemetry

    async def __call__(self, command: RevokeStaffCommand) -> StaffChange:
        """The change; raises InvalidField, StaffIdentityNotFound or PermissionDenied (only
        the database operator may revoke)."""
        email = parse_email(command.email).value
        change = await self.store.revoke_staff(email)
        self.telemetry.event(
            "operator.staff.revoked", identity_id=str(change.identity_id), changed=change.changed
        )
        return change
