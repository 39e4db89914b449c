"""The tenant events' operator views on the wire (staff routes and ``outboxctl events
--json``). No body carries an event's payload."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

from outbox.application.events.operations import BulkEventPreview, EventSearchPage
from outbox.application.events.views import (
    BulkOutcome,
    EventDeadLetter,
    EventDetail,
    EventRecord,
    EventSummary,
    EventTypeView,
    OrganizationBacklog,
    ParkedAggregate,
    PublicationAttempt,
    RepairReceipt,
)
from outbox.application.staff import KeysetPage
from outbox.entrypoints.wire import Out, PageInfo, SequencePageInfo


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
        return cls.built(
            row,
            organization_id=row.organization,
            oldest_due_age_seconds=age.total_seconds() if age is not None else None,
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
        return cls.built(
            item,
            attempt_count=item.attempts,
            resolution=item.resolution.value if item.resolution else None,
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
        return cls.built(item, dead_letter_id=item.id)


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
        return cls.built(
            record,
            attempt_count=record.attempts,
            resolution=record.resolution.value if record.resolution else None,
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
        return cls.built(attempt)


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
        return cls.built(
            detail,
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
        return cls.built(receipt, action=receipt.action.value)


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


class EventSummaryView(Out, frozen=True):
    """One event a search lists, with the state of its current record."""

    id: UUID
    sequence: int
    organization_id: UUID
    event_type: str
    contract_version: int
    aggregate_type: str
    aggregate_id: str
    appended_at: datetime
    record_id: UUID
    state: str
    attempt_count: int
    published_at: datetime | None
    dead_lettered_at: datetime | None
    resolution: str | None

    @classmethod
    def of(cls, item: EventSummary) -> EventSummaryView:
        """The body for ``item``."""
        return cls.built(
            item,
            state=item.state.value,
            attempt_count=item.attempts,
            resolution=item.resolution.value if item.resolution else None,
        )


class EventSearchPageView(Out, frozen=True):
    """A page of events, newest first; pass ``pageInfo.endCursor`` as ``before`` for older."""

    items: list[EventSummaryView]
    page_info: SequencePageInfo

    @classmethod
    def of(cls, page: EventSearchPage) -> EventSearchPageView:
        """The body for ``page``."""
        end = str(page.older) if page.older is not None else None
        return cls(
            items=[EventSummaryView.of(item) for item in page.items],
            page_info=SequencePageInfo(has_next_page=page.older is not None, end_cursor=end),
        )


class BulkPreviewView(Out, frozen=True):
    """How many events the action would change; send ``asOf`` back with the action."""

    action: str
    count: int
    as_of: datetime

    @classmethod
    def of(cls, preview: BulkEventPreview) -> BulkPreviewView:
        """The body for ``preview``."""
        return cls(action=preview.action.value, count=preview.count, as_of=preview.as_of)


class BulkOutcomeView(Out, frozen=True):
    """What a bulk action changed, what an earlier send of it had, and what still matches."""

    action: str
    changed: int
    replayed: int
    remaining: int

    @classmethod
    def of(cls, outcome: BulkOutcome) -> BulkOutcomeView:
        """The body for ``outcome``."""
        return cls.built(outcome, action=outcome.action.value)
