"""The operator's port over suppressions and receipts.

``actor`` works as in OperatorStore (ports.py): a staff member with an elevation digest is
checked by the database; None means the database operator (``outboxctl``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol
from uuid import UUID

from outbox.application.operator.suppression_views import (
    ReceiptView,
    SuppressionChange,
    SuppressionView,
)
from outbox.application.staff import StaffActor
from outbox.domain.channels import Channel


class SuppressionStore(Protocol):
    """Suppressions listed, added and lifted (audited), and a message's receipts.

    Every method raises StaffRequired or StepUpRequired for a caller the database refuses,
    PermissionDenied for a connection that may not act without an elevation, InvalidRequest
    for an argument the database refuses, and StoreUnavailable for a transient error.
    """

    async def suppressions(
        self, *, actor: StaffActor | None, include_lifted: bool, limit: int
    ) -> Sequence[SuppressionView]:
        """Up to ``limit`` suppressions, newest first; lifted ones too if asked."""
        ...

    async def add(
        self, *, actor: StaffActor | None, destination: str, channel: Channel, reason: str
    ) -> SuppressionChange:
        """Suppress the exact ``destination``, audited with ``reason``."""
        ...

    async def lift(
        self, *, actor: StaffActor | None, destination: str, reason: str
    ) -> SuppressionChange | None:
        """Lift the active suppression of ``destination``, audited; None when there is none."""
        ...

    async def receipts(
        self, *, actor: StaffActor | None, message_id: UUID
    ) -> Sequence[ReceiptView]:
        """The receipts of one message, oldest first."""
        ...
