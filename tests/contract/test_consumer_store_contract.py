"""The consumer store's contract, against the fake and PostgreSQL alike.

Most tests drive the store through the runner use case (ProcessDeliveries) with a handler that
writes one effect row through the transaction it is given, so each proves what matters: an
effect exists exactly when its delivery completed. A batch's handlers share one transaction,
each in a savepoint; the batch's attempts are recorded in one call and commit once.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import attrs
import pytest

from outbox.adapters.postgres.pool import open_pool
from outbox.application.errors import PermissionDenied
from outbox.application.events.consumer_handlers import ConsumerRegistry, Reject, RetryAfter
from outbox.application.events.consumer_ports import (
    ClaimedDelivery,
    DeliveredEvent,
    ProcessingAttempt,
)
from outbox.application.events.errors import ConsumerPaused
from outbox.application.events.process_deliveries import ProcessDeliveries
from outbox.domain.delivery.outcomes import RecordResult
from tests.consumer_rows import consumer_role, define_type
from tests.contract.consumer_harness import (
    CONSUMER,
    EVENT_TYPE,
    ConsumerHarness,
    MemoryConsumerHarness,
    PostgresConsumerHarness,
)
from tests.fakes.telemetry import RecordingTelemetry
from tests.postgres_fixtures import ConnectAs

ORG_A = uuid.UUID("00000000-0000-4000-8000-00000000000a")
ORG_B = uuid.UUID("00000000-0000-4000-8000-00000000000b")


@pytest.fixture(params=["memory", pytest.param("postgres", marks=pytest.mark.integration)])
async def consumers(
    request: pytest.FixtureRequest, database_url: str, connect_as: ConnectAs
) -> AsyncIterator[ConsumerHarness]:
    """The store under test, shop.fulfilment registered and subscribed to versions 1-2.

    (The memory run gets a database it does not use: an async fixture cannot ask for the
    database fixtures only when it needs them.)"""
    if request.param == "memory":
        harness: ConsumerHarness = MemoryConsumerHarness()
        await harness.register()
        await harness.subscribe(EVENT_TYPE, 1, 2)
        yield harness
        return
    async with connect_as() as owner, consumer_role(owner, "shop") as role:
        await define_type(owner, EVENT_TYPE, versions=(1, 2, 3))
        pool = await open_pool(database_url, min_size=1, max_size=6, role=role)
        try:
            postgres = PostgresConsumerHarness(pool=pool, owner=owner, role=role)
            await postgres.prepare()
            await postgres.register()
            await postgres.subscribe(EVENT_TYPE, 1, 2)
            yield postgres
        finally:
            await pool.close()


def _runner(
    consumers: ConsumerHarness, registry: ConsumerRegistry, **options: Any
) -> ProcessDeliveries:
    return ProcessDeliveries(
        store=consumers.store,
        registry=registry,
        clock=consumers.clock,
        telemetry=RecordingTelemetry(),
        owner="contract",
        **options,
    )


def _effect_registry(
    consumers: ConsumerHarness, *, fail: Exception | None = None
) -> ConsumerRegistry:
    registry = ConsumerRegistry()

    @registry.register(CONSUMER, event_types=[EVENT_TYPE], versions=(1, 2))
    async def write(event: DeliveredEvent, handle: object) -> None:
        await consumers.write_effect(handle, event)
        if fail is not None:
            raise fail

    return registry


async def test_a_handled_event_leaves_one_effect_and_is_done(consumers: ConsumerHarness) -> None:
    event_id = await consumers.publish(ORG_A)
    run = _runner(consumers, _effect_registry(consumers))

    result = await run(CONSUMER)

    assert (1, 1) == (result.claimed, result.completed)
    assert [(event_id, 0)] == await consumers.effects()
    assert ["completed"] == await consumers.states()
    assert 0 == (await run(CONSUMER)).claimed


async def test_a_version_outside_the_subscription_is_never_delivered(
    consumers: ConsumerHarness,
) -> None:
    await consumers.publish(ORG_A, version=3)

    assert [] == await consumers.states()
    assert [] == await consumers.store.claim(
        consumer=CONSUMER, owner="c", limit=10, lease=timedelta(seconds=30)
    )


async def test_a_failing_handler_leaves_no_effect_and_retries(consumers: ConsumerHarness) -> None:
    await consumers.publish(ORG_A)
    run = _runner(consumers, _effect_registry(consumers, fail=RuntimeError("secret detail")))

    result = await run(CONSUMER)

    assert 1 == result.retried
    assert [] == await consumers.effects()
    assert ["pending"] == await consumers.states()
    telemetry = run.telemetry
    assert isinstance(telemetry, RecordingTelemetry)
    [retried] = telemetry.named("consumer.delivery_retried")
    assert "RuntimeError" == retried.fields["error_class"]
    assert "secret detail" not in repr(telemetry.events)


async def test_a_rejection_dead_letters_now_and_the_last_retry_too(
    consumers: ConsumerHarness,
) -> None:
    await consumers.register(max_attempts=1)
    await consumers.publish(ORG_A, aggregate=("o", "1"))
    await consumers.publish(ORG_A, aggregate=("o", "2"))
    await consumers.publish(ORG_A, aggregate=("o", "3"))
    registry = ConsumerRegistry()
    answers = iter([Reject("bad_order"), RetryAfter(30), ValueError("x")])

    @registry.register(CONSUMER, event_types=[EVENT_TYPE], versions=(1, 2))
    async def refuse(event: DeliveredEvent, handle: object) -> None:
        raise next(answers)

    result = await _runner(consumers, registry, concurrency=1)(CONSUMER)

    assert 3 == result.dead_lettered
    assert ["dead_lettered"] * 3 == await consumers.states()


async def test_an_ordered_consumer_waits_for_the_aggregate_s_previous_event(
    consumers: ConsumerHarness,
) -> None:
    first = await consumers.publish(ORG_A)
    second = await consumers.publish(ORG_A)
    seen: list[uuid.UUID] = []
    registry = ConsumerRegistry()

    @registry.register(CONSUMER, event_types=[EVENT_TYPE], versions=(1, 2))
    async def note(event: DeliveredEvent, handle: object) -> None:
        seen.append(event.event_id)

    run = _runner(consumers, registry)
    assert 1 == (await run(CONSUMER)).completed
    assert 1 == (await run(CONSUMER)).completed
    assert [first, second] == seen


class _Rollback(Exception):
    """Raised to end a transaction with a rollback, carrying what the record answered."""

    def __init__(self, result: RecordResult) -> None:
        super().__init__(result.value)
        self.result = result


async def _complete_and_roll_back(consumers: ConsumerHarness, claimed: ClaimedDelivery) -> None:
    async with consumers.store.batch() as batch:
        await consumers.write_effect(batch.handle, claimed.event)
        [result] = await batch.record([ProcessingAttempt.completed(claimed)])
        raise _Rollback(result)


async def _complete(consumers: ConsumerHarness, claimed: ClaimedDelivery) -> RecordResult:
    async with consumers.store.batch() as batch:
        await consumers.write_effect(batch.handle, claimed.event)
        [result] = await batch.record([ProcessingAttempt.completed(claimed)])
        return result


async def _record(
    consumers: ConsumerHarness, attempts: list[ProcessingAttempt]
) -> list[RecordResult]:
    async with consumers.store.batch() as batch:
        return list(await batch.record(attempts))


async def test_a_completion_under_a_lost_lease_is_refused(consumers: ConsumerHarness) -> None:
    await consumers.publish(ORG_A)
    lease = consumers.short_lease
    [stale] = await consumers.store.claim(consumer=CONSUMER, owner="a", limit=1, lease=lease)
    await consumers.after_lease()
    [fresh] = await consumers.store.claim(consumer=CONSUMER, owner="b", limit=1, lease=lease * 100)

    with pytest.raises(_Rollback) as caught:
        await _complete_and_roll_back(consumers, stale)

    assert RecordResult.LEASE_LOST is caught.value.result
    assert RecordResult.RECORDED is await _complete(consumers, fresh)
    assert [(fresh.event.event_id, 0)] == await consumers.effects()


async def test_a_rolled_back_completion_keeps_nothing(consumers: ConsumerHarness) -> None:
    await consumers.publish(ORG_A)
    [claimed] = await consumers.store.claim(
        consumer=CONSUMER, owner="a", limit=1, lease=timedelta(seconds=30)
    )

    with pytest.raises(_Rollback) as caught:
        await _complete_and_roll_back(consumers, claimed)

    assert RecordResult.RECORDED is caught.value.result
    assert [] == await consumers.effects()
    assert ["leased"] == await consumers.states()


async def test_a_paused_consumer_claims_nothing_and_cannot_complete(
    consumers: ConsumerHarness,
) -> None:
    await consumers.publish(ORG_A)
    [claimed] = await consumers.store.claim(
        consumer=CONSUMER, owner="a", limit=1, lease=timedelta(seconds=30)
    )
    await consumers.set_active(False)
    await consumers.publish(ORG_B)

    assert [] == await consumers.store.claim(
        consumer=CONSUMER, owner="a", limit=10, lease=timedelta(seconds=30)
    )
    with pytest.raises(ConsumerPaused):
        await _record(consumers, [ProcessingAttempt.completed(claimed)])
    await consumers.set_active(True)
    result = await _runner(consumers, _effect_registry(consumers))(CONSUMER)
    assert 1 == result.completed  # the one published while paused


async def test_replay_delivers_each_event_again_once(consumers: ConsumerHarness) -> None:
    ids = [await consumers.publish(ORG_A, aggregate=("o", str(n))) for n in range(3)]
    run = _runner(consumers, _effect_registry(consumers))
    await run(CONSUMER)

    assert 2 == await consumers.replay(2)
    assert 2 == (await run(CONSUMER)).completed
    assert sorted([*((i, 0) for i in ids), (ids[1], 1), (ids[2], 1)]) == await consumers.effects()


async def test_organizations_share_the_batch(consumers: ConsumerHarness) -> None:
    await consumers.register(ordered=False)
    for n in range(8):
        await consumers.publish(ORG_A, aggregate=("o", str(n)))
    await consumers.publish(ORG_B)

    claimed = await consumers.store.claim(
        consumer=CONSUMER, owner="a", limit=4, lease=timedelta(seconds=30)
    )

    assert 4 == len(claimed)
    assert ORG_B in {c.event.organization_id for c in claimed}


async def test_an_event_without_a_handler_is_dead_lettered(consumers: ConsumerHarness) -> None:
    await consumers.publish(ORG_A, version=2)
    registry = ConsumerRegistry()

    @registry.register(CONSUMER, event_types=[EVENT_TYPE], versions=(1, 1))
    async def only_one(event: DeliveredEvent, handle: object) -> None:
        raise AssertionError

    assert 1 == (await _runner(consumers, registry)(CONSUMER)).dead_lettered


async def test_another_module_s_consumer_is_refused(consumers: ConsumerHarness) -> None:
    if isinstance(consumers, MemoryConsumerHarness):
        consumers.fake.register("billing.ledger", "billing")
    else:
        assert isinstance(consumers, PostgresConsumerHarness)
        await consumers.owner.execute("INSERT INTO events.modules (code) VALUES ('billing')")
        await consumers.owner.execute(
            "SELECT events.register_consumer('billing.ledger', 'billing')"
        )
    with pytest.raises(PermissionDenied):
        await consumers.store.claim(
            consumer="billing.ledger", owner="a", limit=1, lease=timedelta(seconds=30)
        )


def _failing_for(
    consumers: ConsumerHarness, failing: set[uuid.UUID], *, error: Exception
) -> ConsumerRegistry:
    """Writes each event's effect; then raises ``error`` for the events in ``failing``."""
    registry = ConsumerRegistry()

    @registry.register(CONSUMER, event_types=[EVENT_TYPE], versions=(1, 2))
    async def write(event: DeliveredEvent, handle: object) -> None:
        await consumers.write_effect(handle, event)
        if event.event_id in failing:
            raise error

    return registry


async def test_a_failing_handler_in_a_batch_rolls_back_only_its_own_effect(
    consumers: ConsumerHarness,
) -> None:
    ids = [await consumers.publish(ORG_A, aggregate=("o", str(n))) for n in range(3)]
    registry = _failing_for(consumers, {ids[1]}, error=RuntimeError("no"))

    result = await _runner(consumers, registry, concurrency=1)(CONSUMER)

    assert (3, 2, 1) == (result.claimed, result.completed, result.retried)
    assert sorted([(ids[0], 0), (ids[2], 0)]) == await consumers.effects()
    assert ["completed", "pending", "completed"] == await consumers.states()
    # The two effects around the failed one committed in one transaction.
    assert 1 == len(set((await consumers.effect_transactions()).values()))


async def test_a_lost_lease_keeps_that_delivery_s_effect_out_while_the_others_commit(
    consumers: ConsumerHarness,
) -> None:
    ids = [await consumers.publish(ORG_A, aggregate=("o", str(n))) for n in range(3)]
    starts: list[uuid.UUID] = []
    registry = ConsumerRegistry()

    @registry.register(CONSUMER, event_types=[EVENT_TYPE], versions=(1, 2))
    async def write(event: DeliveredEvent, handle: object) -> None:
        starts.append(event.event_id)
        await consumers.write_effect(handle, event)
        if event.event_id == ids[1]:
            await consumers.cut_lease(event.delivery_id)  # another process may take it now

    result = await _runner(consumers, registry, concurrency=1)(CONSUMER)

    assert (3, 2, 1) == (result.claimed, result.completed, result.lease_lost)
    assert sorted([(ids[0], 0), (ids[2], 0)]) == await consumers.effects()
    assert ["completed", "leased", "completed"] == await consumers.states()
    # The batch rolled back and the other two ran again, in a transaction of their own.
    assert [*ids, ids[0], ids[2]] == starts
    assert 1 == len(set((await consumers.effect_transactions()).values()))


async def test_a_batch_commits_once_per_group(consumers: ConsumerHarness) -> None:
    ids = [await consumers.publish(ORG_A, aggregate=("o", str(n))) for n in range(6)]

    result = await _runner(consumers, _effect_registry(consumers), concurrency=2)(CONSUMER)

    assert 6 == result.completed
    transactions = await consumers.effect_transactions()
    assert set(ids) == set(transactions)
    # Two groups of three, in claim order, each its own transaction.
    assert {transactions[i] for i in ids[:3]} != {transactions[i] for i in ids[3:]}
    assert 1 == len({transactions[i] for i in ids[:3]})
    assert 1 == len({transactions[i] for i in ids[3:]})
    if isinstance(consumers, PostgresConsumerHarness):
        # Each completion was recorded in the transaction of its effect.
        cursor = await consumers.owner.execute(
            "SELECT count(*) FROM public.consumer_effects AS e"
            " JOIN events.consumer_deliveries AS d ON d.domain_event_id = e.event_id"
            " JOIN events.consumer_processing_attempts AS a ON a.delivery_id = d.id"
            " WHERE a.xmin::text = (e.txid % 4294967296)::text"
        )
        assert (6,) == await cursor.fetchone()


async def test_a_batch_record_answers_each_attempt_in_order(consumers: ConsumerHarness) -> None:
    await consumers.register(max_attempts=1)
    for n in range(4):
        await consumers.publish(ORG_A, aggregate=("o", str(n)))
    first, second, third, fourth = await consumers.store.claim(
        consumer=CONSUMER, owner="a", limit=4, lease=timedelta(seconds=30)
    )
    retry_at = consumers.clock.now() + timedelta(minutes=1)
    stale = attrs.evolve(ProcessingAttempt.completed(third), lease_token=uuid.uuid4())

    results = await _record(
        consumers,
        [
            ProcessingAttempt.completed(first),
            ProcessingAttempt.completed(first),  # named twice: the first counts
            stale,
            ProcessingAttempt(
                delivery_id=second.event.delivery_id,
                lease_token=second.lease_token,
                attempt=1,
                outcome="retry",  # at the cap: dead-lettered
                error_class="ValueError",
                retry_at=retry_at,
            ),
            ProcessingAttempt(
                delivery_id=fourth.event.delivery_id,
                lease_token=fourth.lease_token,
                attempt=1,
                outcome="dead_letter",
                error_class="Reject",
                code="bad_order",
            ),
        ],
    )

    recorded, lost = RecordResult.RECORDED, RecordResult.LEASE_LOST
    assert [recorded, lost, lost, recorded, recorded] == results
    assert ["completed", "dead_lettered", "leased", "dead_lettered"] == await consumers.states()


async def test_a_paused_consumer_s_batch_records_nothing(consumers: ConsumerHarness) -> None:
    for n in range(2):
        await consumers.publish(ORG_A, aggregate=("o", str(n)))
    claimed = await consumers.store.claim(
        consumer=CONSUMER, owner="a", limit=2, lease=timedelta(seconds=30)
    )
    await consumers.set_active(False)

    with pytest.raises(ConsumerPaused):
        await _record(consumers, [ProcessingAttempt.completed(c) for c in claimed])

    assert ["leased", "leased"] == await consumers.states()


async def test_an_ordered_consumer_s_batch_hands_each_aggregate_on(
    consumers: ConsumerHarness,
) -> None:
    for n in range(3):
        await consumers.publish(ORG_A, aggregate=("o", str(n)))
        await consumers.publish(ORG_A, aggregate=("o", str(n)))
    run = _runner(consumers, _effect_registry(consumers), concurrency=1)

    assert 3 == (await run(CONSUMER)).completed  # one head per aggregate
    assert 3 == (await run(CONSUMER)).completed  # then each aggregate's next
    assert ["completed"] * 6 == await consumers.states()
