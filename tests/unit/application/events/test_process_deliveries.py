"""The consumers' runner: a batch's groups in one transaction each, a savepoint per handler.

The store is the in-memory fake (tests/fakes/consumer_store.py), whose ``commits`` counts the
transactions that committed; the contract suite (tests/contract/test_consumer_store_contract.py)
runs the same runner against PostgreSQL.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import attrs
import pytest

from outbox.application.errors import InvalidRequest, StoreUnavailable
from outbox.application.events.consumer_handlers import ConsumerRegistry
from outbox.application.events.consumer_ports import ClaimedDelivery, DeliveredEvent
from outbox.application.events.process_deliveries import MAX_GROUP, ProcessDeliveries
from outbox.domain.delivery.retry_policy import RetryPolicy
from tests.fakes.consumer_store import FakeBatch, FakeConsumerStore
from tests.fakes.telemetry import RecordingTelemetry

CONSUMER = "shop.fulfilment"
EVENT_TYPE = "sales.order_placed"
ORG = uuid.UUID(int=1)
POISON = "poison"


@pytest.fixture
def store() -> FakeConsumerStore:
    fake = FakeConsumerStore()
    fake.register(CONSUMER, "shop", max_attempts=5, ordered=True)
    fake.subscribe(CONSUMER, EVENT_TYPE, 1, 1)
    return fake


def _publish(store: FakeConsumerStore, count: int) -> list[uuid.UUID]:
    """``count`` events, each of its own aggregate; their ids in publication order."""
    return [
        store.publish(organization_id=ORG, event_type=EVENT_TYPE, aggregate=("o", str(n))).id
        for n in range(count)
    ]


def _runner(store: Any, registry: ConsumerRegistry, **options: Any) -> ProcessDeliveries:
    clock = store.clock if isinstance(store, FakeConsumerStore) else store.fake.clock
    return ProcessDeliveries(
        store=store,
        registry=registry,
        clock=clock,
        telemetry=RecordingTelemetry(),
        owner="unit",
        retry_policy=RetryPolicy(schedule=(timedelta(seconds=30),)),
        **options,
    )


def _registry(handle: Any) -> ConsumerRegistry:
    registry = ConsumerRegistry()
    registry.register(CONSUMER, event_types=[EVENT_TYPE], versions=(1, 1))(handle)
    return registry


async def _write(event: DeliveredEvent, handle: list[Any]) -> None:
    handle.append(event.event_id)


def _states(store: FakeConsumerStore) -> list[str]:
    return [d.state for d in sorted(store.deliveries, key=lambda d: d.sequence)]


async def test_a_batch_runs_as_concurrency_groups_each_committed_once(store):
    ids = _publish(store, 8)

    result = await _runner(store, _registry(_write), concurrency=4)(CONSUMER)

    assert 8 == result.completed
    assert 4 == store.commits
    # Consecutive pairs in claim order, each pair one commit.
    by_commit = dict(zip(store.effects, store.effect_commits, strict=True))
    assert [by_commit[i] for i in ids[0::2]] == [by_commit[i] for i in ids[1::2]]
    assert 4 == len(set(by_commit.values()))


async def test_a_group_holds_at_most_max_group_deliveries(store):
    _publish(store, MAX_GROUP + 10)

    result = await _runner(store, _registry(_write), batch_size=200, concurrency=1)(CONSUMER)

    assert MAX_GROUP + 10 == result.completed
    assert 2 == store.commits
    assert MAX_GROUP == store.effect_commits.count(1)


async def test_a_group_s_handlers_run_one_after_another(store):
    _publish(store, 6)
    running: list[int] = [0]
    most: list[int] = [0]

    async def slow(event: DeliveredEvent, handle: list[Any]) -> None:
        running[0] += 1
        most[0] = max(most[0], running[0])
        await asyncio.sleep(0.01)
        running[0] -= 1

    await _runner(store, _registry(slow), concurrency=2)(CONSUMER)

    assert 2 == most[0]  # one handler per group at a time, the two groups side by side


async def test_a_retry_time_is_taken_when_the_batch_records(store):
    """A handler failing early gets its retry time after the group's later handlers ran, so
    one slow handler never makes an earlier retry time past (which the record refuses)."""
    ids = _publish(store, 2)

    async def fail_then_slow(event: DeliveredEvent, handle: list[Any]) -> None:
        if event.event_id == ids[0]:
            raise RuntimeError
        store.clock.advance(timedelta(seconds=40))  # past the 30 s retry, within the lease

    result = await _runner(store, _registry(fail_then_slow), concurrency=1)(CONSUMER)

    assert (1, 1) == (result.retried, result.completed)
    [retry] = [a for a in store.attempts if a.outcome == "retry"]
    assert store.clock.now() + timedelta(seconds=30) == retry.retry_at


async def test_a_handler_past_its_deadline_times_out_and_the_rest_wait_for_their_leases(store):
    ids = _publish(store, 2)

    async def hang_first(event: DeliveredEvent, handle: list[Any]) -> None:
        if event.event_id == ids[0]:
            await asyncio.sleep(5)
        handle.append(event.event_id)

    run = _runner(store, _registry(hang_first), concurrency=1, lease=timedelta(seconds=0.3))
    result = await run(CONSUMER)

    assert (1, 1, 0) == (result.retried, result.lease_lost, result.completed)
    assert ["pending", "leased"] == _states(store)
    assert "TimeoutError" == store.attempts[0].error_class
    telemetry = run.telemetry
    assert isinstance(telemetry, RecordingTelemetry)
    assert 1 == len(telemetry.named("consumer.lease_running_out"))


async def test_a_consumer_paused_meanwhile_records_nothing_and_keeps_no_effect(store):
    _publish(store, 3)

    async def pause(event: DeliveredEvent, handle: list[Any]) -> None:
        handle.append(event.event_id)
        store.set_active(CONSUMER, False)

    result = await _runner(store, _registry(pause), concurrency=1)(CONSUMER)

    assert (3, 3) == (result.claimed, result.paused)
    assert ([], []) == (store.effects, store.attempts)
    assert ["leased"] * 3 == _states(store)


@attrs.define
class RefusingCommit:
    """The fake, whose commit fails (as a deferred constraint would) while a poisoned effect
    is in the transaction; ``opened`` counts the transactions begun."""

    fake: FakeConsumerStore
    opened: int = 0

    async def claim(
        self, *, consumer: str, owner: str, limit: int, lease: timedelta
    ) -> Sequence[ClaimedDelivery]:
        return await self.fake.claim(consumer=consumer, owner=owner, limit=limit, lease=lease)

    @asynccontextmanager
    async def batch(self) -> AsyncIterator[FakeBatch]:
        self.opened += 1
        async with self.fake.batch() as batch:
            yield batch
            if POISON in batch.handle:
                raise InvalidRequest("deferred constraint")


async def test_a_transaction_that_cannot_commit_is_redone_one_delivery_at_a_time(store):
    ids = _publish(store, 3)

    async def poison_second(event: DeliveredEvent, handle: list[Any]) -> None:
        handle.append(POISON if event.event_id == ids[1] else event.event_id)

    refusing = RefusingCommit(store)
    run = _runner(refusing, _registry(poison_second), concurrency=1)
    result = await run(CONSUMER)

    assert (2, 1) == (result.completed, result.retried)
    assert sorted([ids[0], ids[2]]) == sorted(store.effects)
    assert ["completed", "pending", "completed"] == _states(store)
    assert "InvalidRequest" == next(a.error_class for a in store.attempts if a.outcome == "retry")
    # The batch, then one per delivery, then the poisoned one's retry on its own.
    assert 1 + 3 + 1 == refusing.opened
    telemetry = run.telemetry
    assert isinstance(telemetry, RecordingTelemetry)
    [rolled_back] = telemetry.named("consumer.batch_rolled_back")
    assert ("failed", "InvalidRequest") == (
        rolled_back.fields["reason"],
        rolled_back.fields["error_class"],
    )


@attrs.define
class Unreachable:
    """The fake's claim, but no transaction opens: the database went away after the claim."""

    fake: FakeConsumerStore
    opened: int = 0

    async def claim(
        self, *, consumer: str, owner: str, limit: int, lease: timedelta
    ) -> Sequence[ClaimedDelivery]:
        return await self.fake.claim(consumer=consumer, owner=owner, limit=limit, lease=lease)

    @asynccontextmanager
    async def batch(self) -> AsyncIterator[FakeBatch]:
        self.opened += 1
        raise StoreUnavailable("connection_refused")
        yield FakeBatch(self.fake)  # pragma: no cover - never reached


async def test_a_transaction_that_cannot_open_leaves_the_group_to_its_leases(store):
    _publish(store, 4)
    unreachable = Unreachable(store)

    result = await _runner(unreachable, _registry(_write), concurrency=2)(CONSUMER)

    assert (4, 4) == (result.claimed, result.unrecorded)
    assert 2 == unreachable.opened  # one try per group, no handler ran
    assert ["leased"] * 4 == _states(store)


async def test_a_cancelled_handler_cancels_its_group_and_keeps_nothing(store):
    _publish(store, 2)

    async def cancelled(event: DeliveredEvent, handle: list[Any]) -> None:
        handle.append(event.event_id)
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await _runner(store, _registry(cancelled), concurrency=1)(CONSUMER)

    assert ([], []) == (store.effects, store.attempts)
    assert 0 == store.commits
