"""What operators see of the tenant events outbox: backlog per organization, dead
letters, parked aggregates, one event's story, and the receipt of a repair.

No view holds an event's payload (it may carry a tenant's personal data): only its size.
"""

from __future__ import annotations

import enum
from datetime import datetime, timedelta
from uuid import UUID

import attrs

OTHER = "other"  # the metrics row that sums every organization beyond the top ones


@attrs.frozen(kw_only=True)
class OrganizationBacklog:
    """One organization's live records, the age of its oldest due one (None: none due; a
    parked record does not count), its unresolved dead letters and the aggregates they park.

    ``organization`` is the organization's id, or OTHER for the metrics' sum of the rest.
    """

    organization: str
    pending: int = 0
    leased: int = 0
    oldest_due_age: timedelta | None = None
    dead_letters: int = 0
    parked_aggregates: int = 0


class Resolution(enum.StrEnum):
    """What an operator did with a dead letter."""

    RELEASED = "released"  # the aggregate's later events flow; this one stays dead
    REPUBLISHED = "republished"  # a new record of the same event went first
    CANCELLED = "cancelled"  # withdrawn while pending: never published, parks nothing


@attrs.frozen(kw_only=True)
class EventDeadLetter:
    """A dead-lettered outbox record of an event; ``id`` is the record's (the page cursor)."""

    id: UUID
    event_id: UUID
    organization_id: UUID
    event_type: str
    contract_version: int
    aggregate_type: str
    aggregate_id: str
    reason: str  # the failure class that dead-lettered it
    attempts: int
    dead_lettered_at: datetime
    resolution: Resolution | None = None  # None: it still parks its aggregate
    resolved_at: datetime | None = None
    resolved_by: str | None = None  # the acting staff member's identity id
    republished_as: UUID | None = None


@attrs.frozen(kw_only=True)
class ParkedAggregate:
    """An aggregate an unresolved dead letter holds; ``id`` is the dead letter's record id."""

    id: UUID
    organization_id: UUID
    aggregate_type: str
    aggregate_id: str
    event_id: UUID
    event_type: str
    reason: str
    parked_since: datetime
    waiting: int  # live events of the aggregate behind the dead one


@attrs.frozen(kw_only=True)
class EventRecord:
    """One outbox record of an event (a republish adds one), with its dead letter's fate."""

    id: UUID
    state: str  # pending, leased, published or dead_lettered
    attempts: int
    republish_of: UUID | None
    created_at: datetime
    available_at: datetime
    lease_owner: str | None
    lease_expires_at: datetime | None
    published_at: datetime | None
    dead_lettered_at: datetime | None
    dead_letter_reason: str | None
    resolution: Resolution | None
    resolved_at: datetime | None
    resolved_by: str | None
    republished_as: UUID | None


@attrs.frozen(kw_only=True)
class PublicationAttempt:
    """One recorded publication attempt of one of the event's records."""

    record_id: UUID
    attempt: int
    counted: bool
    outcome: str  # published, retry, release or dead_letter
    failure_class: str | None
    code: str
    target: str
    recorded_at: datetime
    retry_at: datetime | None


@attrs.frozen(kw_only=True)
class EventDetail:
    """One event's metadata, its publication, records and attempts (``outboxctl events show``)."""

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
    records: tuple[EventRecord, ...] = ()
    attempts: tuple[PublicationAttempt, ...] = ()


class RepairAction(enum.StrEnum):
    """A repair of a dead letter."""

    REPUBLISH = "republish"
    RELEASE = "release"


class EventState(enum.StrEnum):
    """The state of an event's current record (its live one, else its newest)."""

    PENDING = "pending"
    LEASED = "leased"
    PUBLISHED = "published"
    DEAD_LETTERED = "dead_lettered"


class BulkEventAction(enum.StrEnum):
    """What an operator does to every event a filter matches; each changes only some."""

    REPUBLISH = "republish"  # unresolved dead letters: a new record of each, in append order
    RELEASE = "release"  # unresolved dead letters: resolved, their aggregates' later flow
    CANCEL = "cancel"  # pending records: never published, their aggregates' later flow

    @property
    def subject(self) -> str:
        """What the action changes, in words."""
        return "pending events" if self is BulkEventAction.CANCEL else "unresolved dead letters"

    @property
    def done(self) -> str:
        """The action done, in words: republished, released, cancelled."""
        return "cancelled" if self is BulkEventAction.CANCEL else f"{self.value}d"


@attrs.frozen(kw_only=True)
class EventFilter:
    """Which events: every field optional; ``since`` inclusive, ``until`` exclusive, both on
    the append time."""

    event_type: str | None = None
    organization_id: UUID | None = None
    aggregate_type: str | None = None
    aggregate_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    def matches(self, event: EventSummary) -> bool:
        """Whether ``event`` meets every field given (the SQL's rule, for fakes and tests)."""
        return (
            (self.event_type is None or event.event_type == self.event_type)
            and (self.organization_id is None or event.organization_id == self.organization_id)
            and (self.aggregate_type is None or event.aggregate_type == self.aggregate_type)
            and (self.aggregate_id is None or event.aggregate_id == self.aggregate_id)
            and (self.since is None or event.appended_at >= self.since)
            and (self.until is None or event.appended_at < self.until)
        )


@attrs.frozen(kw_only=True)
class EventSummary:
    """One event as a search lists it: what it is and where its current record stands."""

    id: UUID
    sequence: int  # the append sequence (the page cursor)
    organization_id: UUID
    event_type: str
    contract_version: int
    aggregate_type: str
    aggregate_id: str
    appended_at: datetime
    record_id: UUID
    state: EventState
    attempts: int
    published_at: datetime | None = None
    dead_lettered_at: datetime | None = None
    resolution: Resolution | None = None


@attrs.frozen(kw_only=True)
class BulkOutcome:
    """What a bulk action did: ``changed`` now, ``replayed`` by an earlier send of the same
    request, and how many more still match beyond its limit."""

    action: BulkEventAction
    changed: int
    replayed: int
    remaining: int


@attrs.frozen(kw_only=True)
class RepairReceipt:
    """What a republish or release did (or, for a replay of its key, had done)."""

    action: RepairAction
    dead_letter_id: UUID
    record_id: UUID | None  # the republished record; None for a release
    replayed: bool = False


@attrs.frozen(kw_only=True)
class EventTypeView:
    """A registered event type: its owner module, published contract versions, retirement."""

    code: str
    module: str
    description: str
    versions: tuple[int, ...]
    retired_at: datetime | None
