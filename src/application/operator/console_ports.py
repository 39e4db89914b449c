"""The console's ports: staff search, activity, audit, provider pauses and consumers' lag.

Every method takes the acting staff member with the digest of their fresh elevation (a
StaffActor) and raises StaffRequired or StepUpRequired for a caller the database refuses,
StoreUnavailable for a transient database error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol
from uuid import UUID

from outbox.application.operator.console_views import (
    ActivityMinute,
    AuditEntry,
    EventActivityMinute,
    ProviderPause,
    WorkerLane,
)
from outbox.application.staff import StaffActor


class WorkerBoard(Protocol):
    """Which worker processes run which lanes (outbox.worker_lanes)."""

    async def workers(self, *, actor: StaffActor | None) -> Sequence[WorkerLane]:
        """Every lane of every worker process seen in the last day, running ones first, with
        each lane's lag (None: the database operator asks)."""
        ...


class ConsoleReads(WorkerBoard, Protocol):
    """The console's other reads: both outboxes' activity, audit, workers."""

    async def activity(self, *, actor: StaffActor, minutes: int) -> Sequence[ActivityMinute]:
        """Every minute of the last ``minutes`` (1 to 240), oldest first, zero-filled."""
        ...

    async def event_activity(
        self, *, actor: StaffActor, minutes: int
    ) -> Sequence[EventActivityMinute]:
        """The tenant events' minutes of the last ``minutes`` (1 to 240), oldest first."""
        ...

    async def message_audit(self, *, actor: StaffActor, message_id: UUID) -> Sequence[AuditEntry]:
        """The staff actions on the message (repaired, or made by a repair), oldest first."""
        ...

    async def event_audit(self, *, actor: StaffActor, event_id: UUID) -> Sequence[AuditEntry]:
        """The repairs of the event's dead letters, oldest first."""
        ...


class ProviderPauseStore(Protocol):
    """Operator pauses of providers, audited; every worker honours them."""

    async def pauses(self, *, actor: StaffActor | None) -> Sequence[ProviderPause]:
        """The paused providers, by name (None: the database operator asks)."""
        ...

    async def pause(self, *, actor: StaffActor, provider: str, reason: str) -> bool:
        """Pause ``provider``; False (nothing audited) if it was paused already."""
        ...

    async def resume(self, *, actor: StaffActor, provider: str, reason: str) -> bool:
        """Resume ``provider``; False (nothing audited) if it was not paused."""
        ...
