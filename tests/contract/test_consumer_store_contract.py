"""The consumer store's contract, against the fake and PostgreSQL alike.

Most tests drive the store through the runner use case (ProcessDeliveries) with a handler that
writes one effect row through the transaction it is given, so each proves what matters: an
effect exists exactly when its delivery completed.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

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
    async with consumers.store.transaction() as transaction:
        await consumers.write_effect(transaction.handle, claimed.event)
        raise _Rollback(await transaction.record(ProcessingAttempt.completed(claimed)))


async def _complete(consumers: ConsumerHarness, claimed: ClaimedDelivery) -> RecordResult:
    async with consumers.store.transaction() as transaction:
        await consumers.write_effect(transaction.handle, claimed.event)
        return await transaction.record(ProcessingAttempt.completed(claimed))


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
        await consumers.store.record(ProcessingAttempt.completed(claimed))
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
