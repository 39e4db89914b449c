"""Name the acting staff member by e-mail, for ``outboxctl ... --staff EMAIL``."""

from __future__ import annotations

from uuid import UUID

import attrs

from application.identity.inputs import parse_email
from application.operator.errors import StaffIdentityNotFound
from application.operator.ports import OperatorStore


@attrs.frozen(kw_only=True)
class ResolveStaffMember:
    """Finds the identity; whether it is staff is for the store to decide at each action."""

    store: OperatorStore

    async def __call__(self, email: str) -> UUID:
        """The identity of the verified e-mail; raises InvalidField or StaffIdentityNotFound."""
        identity_id = await self.store.staff_identity(parse_email(email, "--staff").value)
        if identity_id is None:
            raise StaffIdentityNotFound
        return identity_id
