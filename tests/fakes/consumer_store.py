"""An in-memory ConsumerStore that follows 0021_consumers.sql rule for rule.

tests/contract/test_consumer_store_contract.py runs the same tests against it and PostgreSQL:

- ``register`` / ``subscribe`` / ``set_active`` as the database operator would; ``publish``
  is a publication recorded by the worker: it fans out to every subscribed consumer (paused
  ones too), an ordered consumer's delivery ``waiting`` behind its aggregate's live one.
- claim: the consumer's pending-and-due or lease-expired deliveries, organizations in equal
  shares first, the rest oldest first; nothing while paused; PermissionDenied for a consumer
  of another module than ``module`` (the role's).
- record (0050_batched_completions.sql): each attempt fenced by token, live lease and
  attempt; a retry at the attempt cap dead-letters (``attempts_exhausted``); a paused
  consumer raises ConsumerPaused and records none of the call's attempts; a delivery named
  twice counts once; the end of an ordered consumer's delivery makes the next of its aggregate
  pending.
- ``batch()``: a transaction. What is recorded in it, and what the handlers append to its
  ``handle`` (a list), takes effect only when the block ends without an error; a savepoint
  that ends with an error drops what was appended inside it.

Time is ``clock``; inspect ``deliveries``, ``attempts``, ``effects`` and, for each effect,
``effect_commits``: the number of the commit that kept it (one per batch that committed).
"""

from __future__ import annotations

import itertools
import math
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import attrs

from outbox.application.errors import InvalidRequest, PermissionDenied
from outbox.application.events.consumer_ports import (
    ClaimedDelivery,
    DeliveredEvent,
    ProcessingAttempt,
)
from outbox.application.events.errors import ConsumerPaused
from outbox.domain.delivery.outcomes import RecordResult
from tests.fakes.clock import FixedClock

LIVE = frozenset({"waiting", "pending", "leased"})
CLAIMABLE = frozenset({"pending", "leased"})


@attrs.define
class FakeConsumer:
    """A registered consumer."""

    code: str
    module: str
    max_attempts: int = 5
    ordered: bool = True
    active: bool = True
    replay_round: int = 0
    subscriptions: dict[str, tuple[int, int]] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class FakeEvent:
    """A published event."""

    id: UUID
    organization_id: UUID
    event_type: str
    contract_version: int
    aggregate_type: str
    aggregate_id: str
    append_sequence: int
    publication_sequence: int
    payload: Mapping[str, Any]
    occurred_at: datetime


@attrs.define
class FakeDelivery:
    """One delivery of one event to one consumer in one round."""

    id: UUID
    sequence: int
    consumer: str
    event: FakeEvent
    replay_round: int
    state: str
    available_at: datetime
    created_at: datetime
    attempt_count: int = 0
    lease_token: UUID | None = None
    lease_expires_at: datetime | None = None
    dead_letter_reason: str | None = None
    dead_letter_code: str = ""

    def claimable(self, now: datetime) -> bool:
        """Pending and due, or leased under an expired lease."""
        if self.state == "pending":
            return self.available_at <= now
        return (
            self.state == "leased"
            and self.lease_expires_at is not None
            and (self.lease_expires_at <= now)
        )

    def claimable_at(self) -> datetime:
        """When it may be claimed (its claim order)."""
        if self.state == "leased" and self.lease_expires_at is not None:
            return self.lease_expires_at
        return self.available_at


@attrs.define
class FakeConsumerStore:
    """ConsumerStore acting as the role of ``module``."""

    clock: FixedClock = attrs.field(factory=FixedClock)
    module: str = "shop"
    consumers: dict[str, FakeConsumer] = attrs.field(factory=dict)
    deliveries: list[FakeDelivery] = attrs.field(factory=list)
    attempts: list[ProcessingAttempt] = attrs.field(factory=list)
    effects: list[Any] = attrs.field(factory=list)
    effect_commits: list[int] = attrs.field(factory=list)
    commits: int = 0
    _sequences: itertools.count[int] = attrs.field(factory=lambda: itertools.count(1))
    _publications: itertools.count[int] = attrs.field(factory=lambda: itertools.count(1))
    published: list[FakeEvent] = attrs.field(factory=list)

    # The database operator's side ---------------------------------------------------------

    def register(
        self, code: str, module: str, *, max_attempts: int = 5, ordered: bool = True
    ) -> None:
        """Register a consumer (or change its attempts and ordering)."""
        known = self.consumers.get(code)
        if known is None:
            self.consumers[code] = FakeConsumer(code, module, max_attempts, ordered)
        else:
            known.max_attempts, known.ordered = max_attempts, ordered

    def subscribe(self, code: str, event_type: str, min_version: int, max_version: int) -> None:
        """Subscribe ``code`` to versions ``min_version..max_version`` of ``event_type``."""
        if max_version < min_version:
            raise InvalidRequest("p_max_version: the range is empty")
        self.consumers[code].subscriptions[event_type] = (min_version, max_version)

    def set_active(self, code: str, active: bool) -> None:
        """Pause or resume."""
        self.consumers[code].active = active

    def publish(
        self,
        *,
        organization_id: UUID,
        event_type: str,
        version: int = 1,
        aggregate: tuple[str, str] = ("order", "1"),
        payload: Mapping[str, Any] | None = None,
    ) -> FakeEvent:
        """An event the worker just published: fan it out."""
        number = next(self._publications)
        event = FakeEvent(
            id=uuid.uuid4(),
            organization_id=organization_id,
            event_type=event_type,
            contract_version=version,
            aggregate_type=aggregate[0],
            aggregate_id=aggregate[1],
            append_sequence=number,
            publication_sequence=number,
            payload=dict(payload or {"n": 1}),
            occurred_at=self.clock.now(),
        )
        self.published.append(event)
        for consumer in sorted(self.consumers.values(), key=lambda c: c.code):
            low, high = consumer.subscriptions.get(event_type, (1, 0))
            if low <= version <= high:
                self._deliver(consumer, event, waiting_first=False)
        return event

    def replay(self, code: str, *, from_sequence: int) -> int:
        """Deliver again, in a new round, what was published from ``from_sequence`` on."""
        consumer = self.consumers[code]
        consumer.replay_round += 1
        written = 0
        for event in self.published:
            low, high = consumer.subscriptions.get(event.event_type, (1, 0))
            if (
                event.publication_sequence >= from_sequence
                and low <= event.contract_version <= high
            ):
                self._deliver(consumer, event, waiting_first=False)
                written += 1
        return written

    def _deliver(self, consumer: FakeConsumer, event: FakeEvent, *, waiting_first: bool) -> None:
        now = self.clock.now()
        waiting = waiting_first or (
            consumer.ordered and self._live_head(consumer, event) is not None
        )
        self.deliveries.append(
            FakeDelivery(
                id=uuid.uuid4(),
                sequence=next(self._sequences),
                consumer=consumer.code,
                event=event,
                replay_round=consumer.replay_round,
                state="waiting" if waiting else "pending",
                available_at=now,
                created_at=now,
            )
        )

    def _live_head(self, consumer: FakeConsumer, event: FakeEvent) -> FakeDelivery | None:
        for delivery in self.deliveries:
            if (
                delivery.consumer == consumer.code
                and delivery.state in LIVE
                and (
                    delivery.event.organization_id,
                    delivery.event.aggregate_type,
                    delivery.event.aggregate_id,
                )
                == (event.organization_id, event.aggregate_type, event.aggregate_id)
            ):
                return delivery
        return None

    # The consumer's side ------------------------------------------------------------------

    def _own(self, code: str) -> FakeConsumer:
        consumer = self.consumers.get(code)
        if consumer is None:
            raise InvalidRequest(f"p_consumer: unknown consumer {code}")
        if consumer.module != self.module:
            raise PermissionDenied("42501")
        return consumer

    async def claim(
        self, *, consumer: str, owner: str, limit: int, lease: timedelta
    ) -> Sequence[ClaimedDelivery]:
        """Lease up to ``limit`` claimable deliveries, organizations in equal shares first."""
        del owner
        known = self._own(consumer)
        if not known.active:
            return []
        now = self.clock.now()
        due = sorted(
            (
                d
                for d in self.deliveries
                if d.consumer == consumer and d.state in CLAIMABLE and d.claimable(now)
            ),
            key=lambda d: (d.claimable_at(), d.sequence),
        )
        organizations = sorted({d.event.organization_id for d in due})[:limit]
        taken: list[FakeDelivery] = []
        if organizations:
            share = max(1, math.floor(limit / len(organizations)))
            for organization in organizations:
                taken.extend([d for d in due if d.event.organization_id == organization][:share])
            taken.extend([d for d in due if d not in taken][: limit - len(taken)])
        claimed = []
        for delivery in sorted(taken[:limit], key=lambda d: d.sequence):
            delivery.state = "leased"
            delivery.lease_token = uuid.uuid4()
            delivery.lease_expires_at = now + lease
            claimed.append(self._claimed(delivery, known))
        return claimed

    def _claimed(self, delivery: FakeDelivery, consumer: FakeConsumer) -> ClaimedDelivery:
        event = delivery.event
        assert delivery.lease_token is not None
        assert delivery.lease_expires_at is not None
        return ClaimedDelivery(
            event=DeliveredEvent(
                delivery_id=delivery.id,
                event_id=event.id,
                organization_id=event.organization_id,
                event_type=event.event_type,
                contract_version=event.contract_version,
                aggregate_type=event.aggregate_type,
                aggregate_id=event.aggregate_id,
                append_sequence=event.append_sequence,
                publication_sequence=event.publication_sequence,
                replay_round=delivery.replay_round,
                payload=event.payload,
                occurred_at=event.occurred_at,
                attempt=delivery.attempt_count + 1,
            ),
            max_attempts=consumer.max_attempts,
            lease_token=delivery.lease_token,
            lease_expires_at=delivery.lease_expires_at,
        )

    def _check(self, attempt: ProcessingAttempt) -> Callable[[], None] | None:
        """The change ``attempt`` makes, or None when it lost its lease."""
        now = self.clock.now()
        if attempt.outcome == "retry" and (attempt.retry_at is None or attempt.retry_at <= now):
            raise InvalidRequest("p_retry_at: a retry time must be in the future")
        delivery = next((d for d in self.deliveries if d.id == attempt.delivery_id), None)
        if delivery is None:
            return None
        consumer = self.consumers[delivery.consumer]
        if consumer.module != self.module:
            raise PermissionDenied("42501")
        if not consumer.active:
            raise ConsumerPaused("OXE04")
        if (
            delivery.state != "leased"
            or delivery.lease_token != attempt.lease_token
            or delivery.lease_expires_at is None
            or delivery.lease_expires_at <= now
            or attempt.attempt != delivery.attempt_count + 1
        ):
            return None

        def apply() -> None:
            self._apply(consumer, delivery, attempt, now)

        return apply

    def _apply(
        self,
        consumer: FakeConsumer,
        delivery: FakeDelivery,
        attempt: ProcessingAttempt,
        now: datetime,
    ) -> None:
        outcome = attempt.outcome
        if outcome == "retry" and attempt.attempt >= consumer.max_attempts:
            outcome = "dead_letter"
        self.attempts.append(attrs.evolve(attempt, outcome=outcome))
        delivery.attempt_count = attempt.attempt
        delivery.lease_token = delivery.lease_expires_at = None
        if outcome == "completed":
            delivery.state = "completed"
        elif outcome == "retry":
            assert attempt.retry_at is not None
            delivery.state, delivery.available_at = "pending", attempt.retry_at
        else:
            delivery.state = "dead_lettered"
            delivery.dead_letter_reason = (
                "attempts_exhausted" if attempt.outcome == "retry" else "rejected"
            )
            delivery.dead_letter_code = attempt.code or attempt.error_class or ""
        if consumer.ordered and delivery.state in {"completed", "dead_lettered"}:
            following = self._live_head(consumer, delivery.event)
            if following is not None and following.state == "waiting":
                following.state, following.available_at = "pending", now

    @asynccontextmanager
    async def batch(self) -> AsyncIterator[FakeBatch]:
        """Changes recorded in the block, and the handlers' effects, kept only on success."""
        batch = FakeBatch(self)
        yield batch
        for apply in batch.staged:
            apply()
        self.commits += 1
        self.effects.extend(batch.handle)
        self.effect_commits.extend([self.commits] * len(batch.handle))


@attrs.define
class FakeBatch:
    """A batch's transaction: ``handle`` is a list the handlers append their effects to."""

    store: FakeConsumerStore
    handle: list[Any] = attrs.field(factory=list)
    staged: list[Callable[[], None]] = attrs.field(factory=list)

    @asynccontextmanager
    async def savepoint(self) -> AsyncIterator[None]:
        """Drops what was appended to ``handle`` inside the block when it raises."""
        mark = len(self.handle)
        try:
            yield
        except BaseException:
            del self.handle[mark:]
            raise

    async def record(self, attempts: Sequence[ProcessingAttempt]) -> list[RecordResult]:
        """Check every attempt now (a refusal records none); apply them when the batch
        commits."""
        named: set[UUID] = set()
        checked: list[Callable[[], None] | None] = []
        for attempt in attempts:
            apply = None if attempt.delivery_id in named else self.store._check(attempt)
            named.add(attempt.delivery_id)
            checked.append(apply)
        self.staged.extend(apply for apply in checked if apply is not None)
        return [
            RecordResult.LEASE_LOST if apply is None else RecordResult.RECORDED for apply in checked
        ]
