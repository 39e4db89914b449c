"""Grant staff membership to the identity of a verified e-mail (``outboxctl staff grant``)."""

from __future__ import annotations

import attrs

from outbox.application.identity.inputs import parse_email
from outbox.application.operator.ports import OperatorStore
from outbox.application.operator.views import StaffChange
from outbox.application.ports import Telemetry


@attrs.frozen(kw_only=True)
class GrantStaffCommand:
    """The e-mail address the new staff member signs in with."""

    email: str = attrs.field(repr=False)


@attrs.frozen(kw_only=True)
class GrantStaff:
    """Makes an identity staff; granting an active member again changes nothing."""

    store: OperatorStore
    telemetry: Telemetry

    async def __call__(self, command: GrantStaffCommand) -> StaffChange:
        """The change; raises InvalidField, StaffIdentityNotFound or PermissionDenied (only
        the database operator may grant)."""
        email = parse_email(command.email).value
        change = await self.store.grant_staff(email)
        self.telemetry.event(
            "operator.staff.granted", identity_id=str(change.identity_id), changed=change.changed
        )
        return change
