"""The operator's own port: staff membership, over the store that also serves the queue's
staff-gated reads and repairs (outbox.application.delivery.operator_ports)."""

from __future__ import annotations

from datetime import datetime
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

    async def break_glass_step_up(
        self, *, email: str, challenge_id: UUID, code_hash: str, expires_at: datetime, reason: str
    ) -> UUID:
        """Open a step-up challenge of the active staff member of ``email`` with the code
        hashed as ``code_hash``, closing any open one, and audit ``reason``; nothing is sent.
        The identity's id (database operator only).

        Raises StaffIdentityNotFound, or NotStaff for an identity that is not active staff.
        """
        ...
