"""Name the acting staff member by e-mail, for ``outboxctl ... --staff EMAIL``."""

from __future__ import annotations

import attrs

from outbox.application.identity.inputs import parse_email
from outbox.application.operator.errors import StaffIdentityNotFound
from outbox.application.operator.ports import OperatorStore
from outbox.application.staff import StaffActor


@attrs.frozen(kw_only=True)
class ResolveStaffMember:
    """Finds the identity; whether it is staff is for the store to decide at each action.

    The actor it answers carries no elevation: the database operator acts in its name.
    """

    store: OperatorStore

    async def __call__(self, email: str) -> StaffActor:
        """The identity of the verified e-mail; raises InvalidField or StaffIdentityNotFound."""
        identity_id = await self.store.staff_identity(parse_email(email, "--staff").value)
        if identity_id is None:
            raise StaffIdentityNotFound
        return StaffActor(identity_id=identity_id)
