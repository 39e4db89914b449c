"""The operator's own port: staff membership, over the store that also serves the queue's
staff-gated reads and repairs (outbox.application.delivery.operator_ports)."""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from outbox.application.delivery.operator_ports import MessageOperatorStore
from outbox.application.operator.views import StaffChange


class OperatorStore(MessageOperatorStore, Protocol):
    """The queue's staff-gated store, and staff membership (database operator only)."""

    async def staff_identity(self, email: str) -> UUID | None:
        """The identity whose verified e-mail login is ``email`` (database operator only)."""
        ...

    async def grant_staff(self, email: str) -> StaffChange:
        """Make the identity of ``email`` staff, audited (database operator only).

        Raises StaffIdentityNotFound.
        """
        ...

    async def revoke_staff(self, email: str) -> StaffChange:
        """Revoke the staff membership of the identity of ``email``, audited.

        Raises StaffIdentityNotFound.
        """
        ...
