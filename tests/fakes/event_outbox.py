"""An in-memory tenant events outbox: DomainEventAppender and EventOutboxStore in one.

It follows the SQL of 0019_events_functions.sql rule for rule (tests/contract/
test_event_outbox_contract.py runs the same tests against both):

- registration: ``register_event_type("sales.order_placed", versions=(1,))`` registers the
  module too; ``retire_event_type``. The fake appends as ``producer_module`` (the calling
  role's module in the database; None: an unmapped role); ``as_module("billing")`` is an
  appender of another module sharing this state.
- append: idempotent per (organization, module, key) on the content (type, version,
  aggregate, payload, occurred-at); OXE01-OXE03 as the application's errors.
- claim: only the head of each aggregate (its oldest live record, none while an unresolved
  dead letter parks it), due (pending and available, or leased with an expired lease);
  organizations get equal shares of the batch first, the rest goes oldest first.
- record: fenced by token, live lease and attempt (the claimed attempts + 1); a record named
  twice counts once; a retry time not in the future is refused (InvalidRequest), recording
  nothing; 'release' does not count an attempt.
- operators (0020's functions, for tests): ``release`` and ``republish`` a dead letter.

Time is ``clock`` (a FixedClock): it moves only when a test moves it. Inspect ``events``,
``records``, ``attempts``, ``publications`` and ``dead_letters``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import math
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import attrs

from outbox.application.errors import InvalidRequest, PermissionDenied
from outbox.application.events.errors import (
    ContractVersionUnpublished,
    EventTypeRetired,
    IdempotencyConflict,
)
from outbox.application.events.ports import ClaimedEvent, PublicationRecord
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.outcomes import DeadLetter, Published, RecordResult, Release, Retry
from outbox.domain.delivery.retention import RetentionPolicy
from outbox.domain.events.domain_events import NewDomainEvent
from tests.fakes.clock import FixedClock

TRACE_CONTEXT = re.compile(r"00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}")
LIVE = frozenset({"pending", "leased"})
# The failure classes an attempt may name (publication_attempts_class_known); a dead letter
# any of them but PROVIDER_SUSPENDED.
FAILURE_CLASSES = frozenset(
    {
        FailureClass.REJECTED,
        FailureClass.THROTTLED,
        FailureClass.UNAVAILABLE,
        FailureClass.INDETERMINATE,
        FailureClass.PROVIDER_SUSPENDED,
        FailureClass.UNEXPECTED_WORKER_ERROR,
    }
)
MAX_LIMIT = 1000

AggregateKey = tuple[UUID, str, str]


@attrs.frozen(kw_only=True)
class StoredEvent:
    """One row of events.domain_events."""

    id: UUID
    append_sequence: int
    organization_id: UUID
    event_type: str
    contract_version: int
    module: str
    aggregate_type: str
    aggregate_id: str
    idempotency_key: str
    payload: Mapping[str, Any]
    occurred_at: datetime
    appended_at: datetime
    trace_context: str | None

    @property
    def aggregate(self) -> AggregateKey:
        """The (organization, aggregate type, aggregate id) whose order this event keeps."""
        return (self.organization_id, self.aggregate_type, self.aggregate_id)


@attrs.define(kw_only=True)
class StoredRecord:
    """One row of events.outbox_records."""

    id: UUID
    event: StoredEvent
    state: str = "pending"
    attempts: int = 0
    available_at: datetime
    created_at: datetime
    lease_owner: str | None = None
    lease_token: UUID | None = None
    lease_expires_at: datetime | None = None
    published_at: datetime | None = None
    dead_lettered_at: datetime | None = None
    dead_letter_reason: FailureClass | None = None
    republish_of: UUID | None = None

    @property
    def is_live(self) -> bool:
        """Pending or leased: not final yet."""
        return self.state in LIVE

    @property
    def claimable_at(self) -> datetime | None:
        """When a claim may take it (as the generated column of outbox_records)."""
        if self.state == "pending":
            return self.available_at
        if self.state == "leased":
            return self.lease_expires_at
        return None

    def holds(self, token: UUID, now: datetime) -> bool:
        """Whether ``token`` is this record's live lease at ``now``."""
        return (
            self.state == "leased"
            and self.lease_token == token
            and self.lease_expires_at is not None
            and self.lease_expires_at > now
        )


@attrs.frozen(kw_only=True)
class StoredAttempt:
    """One row of events.publication_attempts."""

    record_id: UUID
    attempt: int
    counted: bool
    outcome: str  # published | retry | release | dead_letter
    failure_class: FailureClass | None
    code: str
    target: str
    recorded_at: datetime
    retry_at: datetime | None
    lease_token: UUID


@attrs.frozen(kw_only=True)
class StoredPublication:
    """One row of events.domain_event_publications."""

    publication_sequence: int
    event_id: UUID
    record_id: UUID
    organization_id: UUID
    published_at: datetime


@attrs.define(kw_only=True)
class StoredDeadLetter:
    """One row of events.dead_letters; ``resolution`` is None while it parks its aggregate."""

    record_id: UUID
    event: StoredEvent
    reason: FailureClass
    dead_lettered_at: datetime
    resolution: str | None = None  # released | republished
    republished_as: UUID | None = None


def _normalized(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The payload as jsonb would keep it (and compare it)."""
    value = json.loads(json.dumps(payload))
    assert isinstance(value, dict)
    return value


def _encode(record: PublicationRecord) -> tuple[str, FailureClass | None, str, datetime | None]:
    match record.outcome:
        case Published():
            return ("published", None, "", None)
        case Retry(available_at=at, failure_class=failure, code=code):
            return ("retry", failure, code, at)
        case Release(available_at=at, failure_class=failure, code=code):
            return ("release", failure, code, at)
        case DeadLetter(reason=reason, code=code):
            return ("dead_letter", reason, code, None)


@attrs.define
class InMemoryEventOutbox:
    """The events outbox in memory; see the module's docstring for its rules."""

    clock: FixedClock = attrs.field(factory=FixedClock)
    producer_module: str | None = "sales"
    event_types: dict[str, str] = attrs.field(factory=dict)  # code -> owner module
    versions: set[tuple[str, int]] = attrs.field(factory=set)
    retired: set[str] = attrs.field(factory=set)
    events: dict[UUID, StoredEvent] = attrs.field(factory=dict)
    records: dict[UUID, StoredRecord] = attrs.field(factory=dict)
    attempts: list[StoredAttempt] = attrs.field(factory=list)
    publications: list[StoredPublication] = attrs.field(factory=list)
    dead_letters: dict[UUID, StoredDeadLetter] = attrs.field(factory=dict)
    notifications: int = 0
    _sequence: itertools.count[int] = attrs.field(factory=lambda: itertools.count(1), repr=False)
    _publication: itertools.count[int] = attrs.field(factory=lambda: itertools.count(1), repr=False)
    _wake: asyncio.Event | None = attrs.field(default=None, repr=False)

    # Registration (events.register_* in the database)

    def register_event_type(self, code: str, *, versions: Iterable[int] = (1,)) -> None:
        """Register ``code`` (owned by the module its code starts with) and publish versions."""
        self.event_types.setdefault(code, code.split(".", 1)[0])
        for version in versions:
            self.versions.add((code, version))

    def retire_event_type(self, code: str) -> None:
        """The type takes no new events; what was appended still flows."""
        self.retired.add(code)

    def as_module(self, module: str | None) -> ModuleAppender:
        """An appender acting as ``module``'s producer role over this same outbox."""
        return ModuleAppender(outbox=self, module=module)

    # DomainEventAppender

    async def append(self, event: NewDomainEvent) -> UUID:
        """Append as ``producer_module``: the event and its outbox record; return the id."""
        return self.append_as(self.producer_module, event)

    def append_as(self, module: str | None, event: NewDomainEvent) -> UUID:
        """Append ``event`` as ``module``'s producer (None: a role that is not a producer)."""
        if module is None:
            raise PermissionDenied("42501")
        if event.trace_context is not None and not TRACE_CONTEXT.fullmatch(event.trace_context):
            raise InvalidRequest("p_trace_context: a W3C traceparent (00-<trace>-<span>-<flags>)")
        owner = self.event_types.get(event.event_type)
        if owner is None:
            raise ContractVersionUnpublished("OXE03")
        if owner != module:
            raise PermissionDenied("42501")
        payload = _normalized(event.payload)
        for stored in self.events.values():
            if (
                stored.organization_id == event.organization_id
                and stored.module == module
                and stored.idempotency_key == event.idempotency_key
            ):
                same = (
                    stored.event_type == event.event_type
                    and stored.contract_version == event.contract_version
                    and stored.aggregate_type == event.aggregate_type
                    and stored.aggregate_id == event.aggregate_id
                    and stored.payload == payload
                    and stored.occurred_at == event.occurred_at
                )
                if not same:
                    raise IdempotencyConflict("OXE01")
                return stored.id
        if event.event_type in self.retired:
            raise EventTypeRetired("OXE02")
        if (event.event_type, event.contract_version) not in self.versions:
            raise ContractVersionUnpublished("OXE03")
        now = self.clock.now()
        stored = StoredEvent(
            id=uuid.uuid4(),
            append_sequence=next(self._sequence),
            organization_id=event.organization_id,
            event_type=event.event_type,
            contract_version=event.contract_version,
            module=module,
            aggregate_type=event.aggregate_type,
            aggregate_id=event.aggregate_id,
            idempotency_key=event.idempotency_key,
            payload=payload,
            occurred_at=event.occurred_at,
            appended_at=now,
            trace_context=event.trace_context,
        )
        self.events[stored.id] = stored
        record = StoredRecord(id=uuid.uuid4(), event=stored, available_at=now, created_at=now)
        self.records[record.id] = record
        self._notify()
        return stored.id

    # EventOutboxStore

    async def claim(self, *, owner: str, limit: int, lease: timedelta) -> Sequence[ClaimedEvent]:
        """Lease up to ``limit`` due heads, organizations in equal shares first."""
        if not owner:
            raise InvalidRequest("p_owner: a claim names its worker")
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidRequest(f"p_limit: must be between 1 and {MAX_LIMIT}")
        if lease <= timedelta(0):
            raise InvalidRequest("p_lease_seconds: must be positive")
        now = self.clock.now()
        due = sorted(
            (r for r in self.heads() if (r.claimable_at or now) <= now),
            key=lambda r: (r.claimable_at, r.event.append_sequence),
        )
        organizations = {r.event.organization_id for r in due}
        if not organizations:
            return []
        share = math.ceil(limit / len(organizations))
        ranked: list[tuple[int, StoredRecord]] = []
        for organization in organizations:
            own = [r for r in due if r.event.organization_id == organization][:share]
            ranked.extend(enumerate(own, start=1))
        ranked.sort(key=lambda pair: (pair[0], pair[1].claimable_at, pair[1].event.append_sequence))
        taken = [r for _, r in ranked[:limit]]
        chosen = {r.id for r in taken}
        taken += [r for r in due if r.id not in chosen][: limit - len(taken)]
        claimed = []
        for record in taken:
            record.state = "leased"
            record.lease_owner = owner
            record.lease_token = uuid.uuid4()
            record.lease_expires_at = now + lease
            claimed.append(self._claimed(record))
        return sorted(claimed, key=lambda c: (c.organization_id, c.append_sequence))

    async def record(self, records: Sequence[PublicationRecord]) -> Sequence[RecordResult]:
        """Record outcomes in order; one result per record, ``lease_lost`` when fenced off."""
        now = self.clock.now()
        seen: set[UUID] = set()
        applying: list[bool] = []
        for record in records:
            applying.append(record.record_id not in seen and self._applies(record, now))
            seen.add(record.record_id)
        for record, applies in zip(records, applying, strict=True):
            kind, failure, _, retry_at = _encode(record)
            if failure is not None and (
                failure not in FAILURE_CLASSES
                or (kind == "dead_letter" and failure is FailureClass.PROVIDER_SUSPENDED)
            ):
                raise InvalidRequest("p_failure_classes: not a publication failure class")
            if applies and retry_at is not None and retry_at <= now:
                raise InvalidRequest("p_retry_at: a retry time must be in the future")
        results = []
        reopened = False
        for record, applies in zip(records, applying, strict=True):
            if not applies:
                results.append(RecordResult.LEASE_LOST)
                continue
            reopened |= self._record_one(record, now)
            results.append(RecordResult.RECORDED)
        if reopened:
            self._notify()
        return results

    async def purge(self, *, retention: RetentionPolicy, limit: int) -> int:
        """Delete up to ``limit`` events whose records are all final past retention."""
        if limit < 1:
            raise InvalidRequest("p_limit: must be at least 1")
        now = self.clock.now()
        doomed = []
        for event in sorted(self.events.values(), key=lambda e: e.append_sequence):
            records = [r for r in self.records.values() if r.event.id == event.id]
            parked = any(
                d.event.id == event.id and d.resolution is None for d in self.dead_letters.values()
            )
            if parked or any(r.is_live for r in records):
                continue
            published = [r.published_at for r in records if r.published_at is not None]
            dead = [r.dead_lettered_at for r in records if r.dead_lettered_at is not None]
            if published:
                due = max(published) <= retention.published_cutoff(now)
            else:
                due = bool(dead) and max(dead) <= retention.dead_lettered_cutoff(now)
            if due:
                doomed.append(event.id)
        doomed = doomed[:limit]
        for event_id in doomed:
            del self.events[event_id]
            gone = {r.id for r in self.records.values() if r.event.id == event_id}
            self.records = {k: r for k, r in self.records.items() if k not in gone}
            self.attempts = [a for a in self.attempts if a.record_id not in gone]
            self.publications = [p for p in self.publications if p.event_id != event_id]
            self.dead_letters = {k: d for k, d in self.dead_letters.items() if k not in gone}
        return len(doomed)

    async def wait_for_work(self, within: float) -> None:
        """Return at once if work was signalled since the last wait, else within seconds."""
        wake = self._signal()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), within)
        wake.clear()

    # The operator's repairs (0020 in the database)

    def release(self, dead_letter_id: UUID) -> None:
        """Resolve the dead letter 'released': it stays dead, its aggregate flows again."""
        dead = self.dead_letters[dead_letter_id]
        assert dead.resolution is None, "the dead letter is already resolved"
        dead.resolution = "released"
        self._notify()

    def republish(self, dead_letter_id: UUID) -> UUID:
        """A new record of the dead letter's event, first of its aggregate; return its id."""
        dead = self.dead_letters[dead_letter_id]
        assert dead.resolution is None, "the dead letter is already resolved"
        now = self.clock.now()
        record = StoredRecord(
            id=uuid.uuid4(),
            event=dead.event,
            available_at=now,
            created_at=now,
            republish_of=dead_letter_id,
        )
        self.records[record.id] = record
        dead.resolution = "republished"
        dead.republished_as = record.id
        self._notify()
        return record.id

    # Views

    def heads(self) -> list[StoredRecord]:
        """Each aggregate's head: its oldest live record, unless a dead letter parks it."""
        parked = {d.event.aggregate for d in self.dead_letters.values() if d.resolution is None}
        heads: dict[AggregateKey, StoredRecord] = {}
        for record in self.records.values():
            key = record.event.aggregate
            if not record.is_live or key in parked:
                continue
            current = heads.get(key)
            if current is None or record.event.append_sequence < current.event.append_sequence:
                heads[key] = record
        return list(heads.values())

    def record_of(self, event_id: UUID) -> StoredRecord:
        """The newest record of an event (a republished event has two)."""
        return max(
            (r for r in self.records.values() if r.event.id == event_id),
            key=lambda r: (r.created_at, r.republish_of is not None),
        )

    # Internals

    def _claimed(self, record: StoredRecord) -> ClaimedEvent:
        event = record.event
        assert record.lease_token is not None
        assert record.lease_expires_at is not None
        return ClaimedEvent(
            record_id=record.id,
            event_id=event.id,
            organization_id=event.organization_id,
            event_type=event.event_type,
            contract_version=event.contract_version,
            aggregate_type=event.aggregate_type,
            aggregate_id=event.aggregate_id,
            append_sequence=event.append_sequence,
            payload=dict(event.payload),
            occurred_at=event.occurred_at,
            appended_at=event.appended_at,
            attempts=record.attempts,
            lease_token=record.lease_token,
            lease_expires_at=record.lease_expires_at,
            trace_context=event.trace_context,
        )

    def _applies(self, record: PublicationRecord, now: datetime) -> bool:
        stored = self.records.get(record.record_id)
        return (
            stored is not None
            and stored.holds(record.lease_token, now)
            and record.attempt == stored.attempts + 1
        )

    def _record_one(self, record: PublicationRecord, now: datetime) -> bool:
        """Apply one fenced outcome; return whether the aggregate's next record may flow."""
        stored = self.records[record.record_id]
        kind, failure, code, retry_at = _encode(record)
        counted = kind != "release"
        self.attempts.append(
            StoredAttempt(
                record_id=stored.id,
                attempt=record.attempt,
                counted=counted,
                outcome=kind,
                failure_class=failure,
                code=code[:100],
                target=record.target[:100],
                recorded_at=now,
                retry_at=retry_at,
                lease_token=record.lease_token,
            )
        )
        stored.lease_owner = stored.lease_token = stored.lease_expires_at = None
        stored.attempts += 1 if counted else 0
        if kind == "published":
            stored.state = "published"
            stored.published_at = now
            self.publications.append(
                StoredPublication(
                    publication_sequence=next(self._publication),
                    event_id=stored.event.id,
                    record_id=stored.id,
                    organization_id=stored.event.organization_id,
                    published_at=now,
                )
            )
            return True
        if kind == "dead_letter":
            assert failure is not None
            stored.state = "dead_lettered"
            stored.dead_lettered_at = now
            stored.dead_letter_reason = failure
            self.dead_letters[stored.id] = StoredDeadLetter(
                record_id=stored.id, event=stored.event, reason=failure, dead_lettered_at=now
            )
            return False
        assert retry_at is not None
        stored.state = "pending"
        stored.available_at = retry_at
        return False

    def _notify(self) -> None:
        self.notifications += 1
        self._signal().set()

    def _signal(self) -> asyncio.Event:
        if self._wake is None:
            self._wake = asyncio.Event()
        return self._wake


@attrs.frozen
class ModuleAppender:
    """A DomainEventAppender acting as one module's producer role over a shared outbox."""

    outbox: InMemoryEventOutbox
    module: str | None

    async def append(self, event: NewDomainEvent) -> UUID:
        """Append ``event`` as this module."""
        return self.outbox.append_as(self.module, event)
