"""The operator's ports over the tenant events outbox.

``actor`` is as in outbox.application.operator.ports: a staff member with the digest of their fresh
elevation (the staff routes), the database operator acting in a staff member's name (no
digest), or, for reads only, None for the database operator itself. Every method raises
StaffRequired or StepUpRequired for a caller the database refuses, PermissionDenied for a
connection that may not act without an elevation, StoreUnavailable for a transient error.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol
from uuid import UUID

from outbox.application.events.views import (
    BulkEventAction,
    BulkOutcome,
    EventDeadLetter,
    EventDetail,
    EventFilter,
    EventState,
    EventSummary,
    EventTypeView,
    OrganizationBacklog,
    ParkedAggregate,
    RepairReceipt,
)
from outbox.application.staff import StaffActor


class EventOperatorStore(Protocol):
    """Reads and repairs of the tenant events outbox; one transaction per call."""

    async def backlog(
        self, *, actor: StaffActor | None, limit: int
    ) -> Sequence[OrganizationBacklog]:
        """Up to ``limit`` organizations with live records or dead letters, the largest
        backlog first."""
        ...

    async def dead_letters(
        self,
        *,
        actor: StaffActor | None,
        organization_id: UUID | None,
        unresolved_only: bool,
        after: UUID | None,
        before: UUID | None,
        limit: int,
    ) -> Sequence[EventDeadLetter]:
        """Up to ``limit`` dead letters, newest first, on one side of the cursor (at most one).

        Raises InvalidRequest when the cursor names no dead letter.
        """
        ...

    async def parked(
        self,
        *,
        actor: StaffActor | None,
        organization_id: UUID | None,
        after: UUID | None,
        before: UUID | None,
        limit: int,
    ) -> Sequence[ParkedAggregate]:
        """Up to ``limit`` parked aggregates, newest dead letter first, as ``dead_letters``."""
        ...

    async def event(self, *, actor: StaffActor | None, event_id: UUID) -> EventDetail | None:
        """The event with its records and attempts; None for an unknown id."""
        ...

    async def republish(
        self,
        *,
        actor: StaffActor,
        dead_letter_id: UUID,
        new_record_id: UUID,
        reason: str,
        idempotency_key: str,
    ) -> RepairReceipt:
        """Add ``new_record_id``, a new record of the dead letter's event that goes before the
        aggregate's later events; resolve the dead letter 'republished'; audit ``reason``.

        A replay of ``idempotency_key`` answers the first receipt and adds nothing. Raises
        DeadLetterNotFound, EventRepairRefused, IdempotencyKeyReused or RequestInProgress.
        """
        ...

    async def release(
        self, *, actor: StaffActor, dead_letter_id: UUID, reason: str, idempotency_key: str
    ) -> RepairReceipt:
        """Resolve the dead letter 'released' (it stays dead; the aggregate's later events
        flow) and audit ``reason``; idempotent and refused as ``republish``."""
        ...

    async def search(
        self,
        *,
        actor: StaffActor | None,
        state: EventState | None,
        where: EventFilter,
        before: int | None,
        limit: int,
    ) -> Sequence[EventSummary]:
        """Up to ``limit`` events ``where`` matches (in ``state``, when given), newest first,
        appended before the event of sequence ``before``."""
        ...

    async def count_bulk(
        self,
        *,
        actor: StaffActor | None,
        action: BulkEventAction,
        where: EventFilter,
        as_of: datetime | None,
    ) -> tuple[int, datetime]:
        """How many events ``action`` would change: the unresolved dead letters (republish,
        release) or the pending records (cancel) ``where`` matches, as of ``as_of`` (None:
        now, by the store's clock, which wrote the rows' times); and that time."""
        ...

    async def bulk_repair(
        self,
        *,
        actor: StaffActor,
        action: BulkEventAction,
        where: EventFilter,
        as_of: datetime,
        reason: str,
        idempotency_key: str,
        limit: int,
    ) -> BulkOutcome:
        """Apply ``action`` to at most ``limit`` of what ``count_bulk`` counts, in append
        order, one audit row each; a replay of ``idempotency_key`` changes nothing more."""
        ...


class EventBacklogGauge(Protocol):
    """The per-organization counts for metrics, read with no identity: the top organizations
    and one OTHER row summing the rest, so their number is bounded."""

    async def metrics(self) -> Sequence[OrganizationBacklog]:
        """The bounded rows, OTHER always among them."""
        ...


class EventCatalog(Protocol):
    """The registered event types, for the database operator (``outboxctl events types``).

    Raises PermissionDenied for a connection that is not the database operator's.
    """

    async def event_types(self) -> Sequence[EventTypeView]:
        """Every event type, by code."""
        ...
