"""The tenant events' operator views on the wire (staff routes and ``outboxctl events
--json``). No body carries an event's payload."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

from outbox.application.operator.event_views import (
    EventDeadLetter,
    EventDetail,
    EventRecord,
    EventTypeView,
    OrganizationBacklog,
    ParkedAggregate,
    PublicationAttempt,
    RepairReceipt,
)
from outbox.application.operator.views import KeysetPage
from outbox.entrypoints.wire import Out, PageInfo


class OrganizationBacklogView(Out, frozen=True):
    """One organization's backlog; the age is null when nothing unparked is due."""

    organization_id: str
    pending: int
    leased: int
    oldest_due_age_seconds: float | None
    dead_letters: int
    parked_aggregates: int

    @classmethod
    def of(cls, row: OrganizationBacklog) -> OrganizationBacklogView:
        """The body for ``row``."""
        age = row.oldest_due_age
        return cls(
            organization_id=row.organization,
            pending=row.pending,
            leased=row.leased,
            oldest_due_age_seconds=age.total_seconds() if age is not None else None,
            dead_letters=row.dead_letters,
            parked_aggregates=row.parked_aggregates,
        )


class EventBacklogView(Out, frozen=True):
    """The organizations with live events or dead letters, the largest backlog first."""

    items: list[OrganizationBacklogView]

    @classmethod
    def of(cls, rows: Sequence[OrganizationBacklog]) -> EventBacklogView:
        """The body for ``rows``."""
        return cls(items=[OrganizationBacklogView.of(row) for row in rows])


class EventDeadLetterView(Out, frozen=True):
    """One dead letter of the tenant events outbox and what became of it."""

    id: UUID
    event_id: UUID
    organization_id: UUID
    event_type: str
    contract_version: int
    aggregate_type: str
    aggregate_id: str
    reason: str
    attempt_count: int
    dead_lettered_at: datetime
    resolution: str | None
    resolved_at: datetime | None
    resolved_by: str | None
    republished_as: UUID | None

    @classmethod
    def of(cls, item: EventDeadLetter) -> EventDeadLetterView:
        """The body for ``item``."""
        return cls(
            id=item.id,
            event_id=item.event_id,
            organization_id=item.organization_id,
            event_type=item.event_type,
            contract_version=item.contract_version,
            aggregate_type=item.aggregate_type,
            aggregate_id=item.aggregate_id,
            reason=item.reason,
            attempt_count=item.attempts,
            dead_lettered_at=item.dead_lettered_at,
            resolution=item.resolution.value if item.resolution else None,
            resolved_at=item.resolved_at,
            resolved_by=item.resolved_by,
            republished_as=item.republished_as,
        )


class EventDeadLetterPageView(Out, frozen=True):
    """A keyset page of dead letters, newest first."""

    items: list[EventDeadLetterView]
    page_info: PageInfo

    @classmethod
    def of(cls, page: KeysetPage[EventDeadLetter]) -> EventDeadLetterPageView:
        """The body for ``page``."""
        return cls(
            items=[EventDeadLetterView.of(item) for item in page.items],
            page_info=PageInfo.of(page),
        )


class ParkedAggregateView(Out, frozen=True):
    """An aggregate a dead letter parks, and how many of its events wait behind it."""

    dead_letter_id: UUID
    organization_id: UUID
    aggregate_type: str
    aggregate_id: str
    event_id: UUID
    event_type: str
    reason: str
    parked_since: datetime
    waiting: int

    @classmethod
    def of(cls, item: ParkedAggregate) -> ParkedAggregateView:
        """The body for ``item``."""
        return cls(
            dead_letter_id=item.id,
            organization_id=item.organization_id,
            aggregate_type=item.aggregate_type,
            aggregate_id=item.aggregate_id,
            event_id=item.event_id,
            event_type=item.event_type,
            reason=item.reason,
            parked_since=item.parked_since,
            waiting=item.waiting,
        )


class ParkedPageView(Out, frozen=True):
    """A keyset page of parked aggregates, newest dead letter first."""

    items: list[ParkedAggregateView]
    page_info: PageInfo

    @classmethod
    def of(cls, page: KeysetPage[ParkedAggregate]) -> ParkedPageView:
        """The body for ``page``."""
        return cls(
            items=[ParkedAggregateView.of(item) for item in page.items],
            page_info=PageInfo.of(page),
        )


class EventRecordView(Out, frozen=True):
    """One outbox record of the event."""

    id: UUID
    state: str
    attempt_count: int
    republish_of: UUID | None
    created_at: datetime
    available_at: datetime
    lease_owner: str | None
    lease_expires_at: datetime | None
    published_at: datetime | None
    dead_lettered_at: datetime | None
    dead_letter_reason: str | None
    resolution: str | None
    resolved_at: datetime | None
    resolved_by: str | None
    republished_as: UUID | None

    @classmethod
    def of(cls, record: EventRecord) -> EventRecordView:
        """The body for ``record``."""
        return cls(
            id=record.id,
            state=record.state,
            attempt_count=record.attempts,
            republish_of=record.republish_of,
            created_at=record.created_at,
            available_at=record.available_at,
            lease_owner=record.lease_owner,
            lease_expires_at=record.lease_expires_at,
            published_at=record.published_at,
            dead_lettered_at=record.dead_lettered_at,
            dead_letter_reason=record.dead_letter_reason,
            resolution=record.resolution.value if record.resolution else None,
            resolved_at=record.resolved_at,
            resolved_by=record.resolved_by,
            republished_as=record.republished_as,
        )


class PublicationAttemptView(Out, frozen=True):
    """One publication attempt of one of the event's records."""

    record_id: UUID
    attempt: int
    counted: bool
    outcome: str
    failure_class: str | None
    code: str
    target: str
    recorded_at: datetime
    retry_at: datetime | None

    @classmethod
    def of(cls, attempt: PublicationAttempt) -> PublicationAttemptView:
        """The body for ``attempt``."""
        return cls(
            record_id=attempt.record_id,
            attempt=attempt.attempt,
            counted=attempt.counted,
            outcome=attempt.outcome,
            failure_class=attempt.failure_class,
            code=attempt.code,
            target=attempt.target,
            recorded_at=attempt.recorded_at,
            retry_at=attempt.retry_at,
        )


class EventDetailView(Out, frozen=True):
    """One event: its metadata and its payload's size, its records and attempts."""

    id: UUID
    organization_id: UUID
    event_type: str
    contract_version: int
    producer_module: str
    aggregate_type: str
    aggregate_id: str
    append_sequence: int
    occurred_at: datetime
    appended_at: datetime
    payload_bytes: int
    trace_context: str | None
    publication_sequence: int | None
    published_at: datetime | None
    records: list[EventRecordView]
    attempts: list[PublicationAttemptView]

    @classmethod
    def of(cls, detail: EventDetail) -> EventDetailView:
        """The body for ``detail``."""
        return cls(
            id=detail.id,
            organization_id=detail.organization_id,
            event_type=detail.event_type,
            contract_version=detail.contract_version,
            producer_module=detail.producer_module,
            aggregate_type=detail.aggregate_type,
            aggregate_id=detail.aggregate_id,
            append_sequence=detail.append_sequence,
            occurred_at=detail.occurred_at,
            appended_at=detail.appended_at,
            payload_bytes=detail.payload_bytes,
            trace_context=detail.trace_context,
            publication_sequence=detail.publication_sequence,
            published_at=detail.published_at,
            records=[EventRecordView.of(r) for r in detail.records],
            attempts=[PublicationAttemptView.of(a) for a in detail.attempts],
        )


class RepairView(Out, frozen=True):
    """What a republish or release did (for a replay: what the first request did)."""

    action: str
    dead_letter_id: UUID
    record_id: UUID | None
    replayed: bool

    @classmethod
    def of(cls, receipt: RepairReceipt) -> RepairView:
        """The body for ``receipt``."""
        return cls(
            action=receipt.action.value,
            dead_letter_id=receipt.dead_letter_id,
            record_id=receipt.record_id,
            replayed=receipt.replayed,
        )


class EventTypeOut(Out, frozen=True):
    """A registered event type: its module, published contract versions and retirement."""

    code: str
    module: str
    description: str
    versions: list[int]
    retired_at: datetime | None


class EventTypesView(Out, frozen=True):
    """The registered event types."""

    items: list[EventTypeOut]

    @classmethod
    def of(cls, types: Sequence[EventTypeView]) -> EventTypesView:
        """The body for ``types``."""
        return cls(
            items=[
                EventTypeOut(
                    code=t.code,
                    module=t.module,
                    description=t.description,
                    versions=list(t.versions),
                    retired_at=t.retired_at,
                )
                for t in types
            ]
        )
