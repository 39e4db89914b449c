"""The events outbox contract: every test runs against the fake and PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import attrs
import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.event_outbox_store import PostgresEventOutboxStore
from outbox.adapters.postgres.work_listener import EVENTS_CHANNEL, WorkListener
from outbox.application.errors import InvalidRequest, PermissionDenied
from outbox.application.events.errors import (
    ContractVersionUnpublished,
    EventTypeRetired,
    IdempotencyConflict,
)
from outbox.application.events.ports import ClaimedEvent, PublicationRecord
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.outcomes import (
    DeadLetter,
    Outcome,
    Published,
    RecordResult,
    Release,
    Retry,
)
from tests.contract.event_outbox_harness import (
    EventHarness,
    MemoryEventHarness,
    PostgresEventHarness,
    new_event,
)
from tests.events_sql import onboard

LEASE = timedelta(seconds=30)
ORG_A = uuid.UUID("0190aaaa-0000-7000-8000-00000000000a")
ORG_B = uuid.UUID("0190bbbb-0000-7000-8000-00000000000b")
TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.fixture
async def onboarded(database_url: str) -> str:
    """The test database with the test modules onboarded."""
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        await onboard(conn)
    return database_url


@pytest.fixture
async def event_store(
    onboarded: str, worker_pool: AsyncConnectionPool
) -> AsyncIterator[PostgresEventOutboxStore]:
    store = PostgresEventOutboxStore(worker_pool, WorkListener(onboarded, EVENTS_CHANNEL))
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture(params=["memory", pytest.param("postgres", marks=pytest.mark.integration)])
def events(request: pytest.FixtureRequest) -> EventHarness:
    if request.param == "memory":
        return MemoryEventHarness()
    return PostgresEventHarness(
        store=request.getfixturevalue("event_store"),
        connect_as=request.getfixturevalue("connect_as"),
    )


async def _claim(
    events: EventHarness, limit: int = 10, lease: timedelta = LEASE
) -> list[ClaimedEvent]:
    return list(await events.store.claim(owner="w1", limit=limit, lease=lease))


async def _record(
    events: EventHarness, claimed: ClaimedEvent, outcome: Outcome, **changes: Any
) -> RecordResult:
    record = PublicationRecord(
        record_id=claimed.record_id,
        lease_token=claimed.lease_token,
        attempt=claimed.attempts + 1,
        outcome=outcome,
    )
    [result] = await events.store.record([attrs.evolve(record, **changes)])
    return result


def _retry(events: EventHarness, seconds: float = 3600) -> Retry:
    return Retry(
        available_at=events.now() + timedelta(seconds=seconds),
        failure_class=FailureClass.UNAVAILABLE,
    )


# Append ---------------------------------------------------------------------------------------


async def test_an_appended_event_is_claimed_with_everything_the_producer_gave(
    events: EventHarness,
) -> None:
    event = new_event(ORG_A, payload={"total": 42, "lines": [1, 2]}, trace_context=TRACE)
    event_id = await events.append(event)

    [claimed] = await _claim(events)

    assert (event_id, ORG_A, "sales.order_placed", 1) == (
        claimed.event_id,
        claimed.organization_id,
        claimed.event_type,
        claimed.contract_version,
    )
    assert ("order", "order-1", {"total": 42, "lines": [1, 2]}) == (
        claimed.aggregate_type,
        claimed.aggregate_id,
        dict(claimed.payload),
    )
    assert (event.occurred_at, TRACE, 0) == (
        claimed.occurred_at,
        claimed.trace_context,
        claimed.attempts,
    )


async def test_a_replay_with_the_same_content_returns_the_first_id(events: EventHarness) -> None:
    event = new_event(ORG_A, key="order-1-placed")
    first = await events.append(event)

    assert first == await events.append(event)
    assert 1 == len(await _claim(events))


@pytest.mark.parametrize(
    "change",
    [
        {"payload": {"total": 2}},
        {"aggregate_id": "order-2"},
        {"occurred_at": new_event().occurred_at + timedelta(seconds=1)},
    ],
    ids=["payload", "aggregate", "occurred-at"],
)
async def test_a_replay_with_other_content_is_an_idempotency_conflict(
    events: EventHarness, change: dict[str, Any]
) -> None:
    await events.append(new_event(ORG_A, key="order-1-placed"))

    with pytest.raises(IdempotencyConflict):
        await events.append(new_event(ORG_A, key="order-1-placed", **change))


async def test_the_same_key_in_another_organization_is_another_event(events: EventHarness) -> None:
    first = await events.append(new_event(ORG_A, key="k"))
    second = await events.append(new_event(ORG_B, key="k"))

    assert first != second


async def test_a_retired_type_takes_no_new_event_but_answers_a_replay(events: EventHarness) -> None:
    event = new_event(ORG_A, key="before")
    first = await events.append(event)
    await events.retire("sales.order_placed")

    with pytest.raises(EventTypeRetired):
        await events.append(new_event(ORG_A))
    assert first == await events.append(event)


@pytest.mark.parametrize(
    "change",
    [{"version": 2}, {"event_type": "sales.order_cancelled"}],
    ids=["unpublished-version", "unknown-type"],
)
async def test_an_unpublished_contract_is_refused(
    events: EventHarness, change: dict[str, Any]
) -> None:
    with pytest.raises(ContractVersionUnpublished):
        await events.append(new_event(ORG_A, **change))


async def test_a_module_cannot_append_another_modules_type(events: EventHarness) -> None:
    with pytest.raises(PermissionDenied):
        await events.append(new_event(ORG_A), module="billing")


async def test_a_role_that_is_no_producer_cannot_append(events: EventHarness) -> None:
    with pytest.raises(PermissionDenied):
        await events.append(new_event(ORG_A), module=None)


# Order ----------------------------------------------------------------------------------------


async def test_only_the_oldest_event_of_an_aggregate_is_claimed(events: EventHarness) -> None:
    first = await events.append(new_event(ORG_A, "order-1"))
    second = await events.append(new_event(ORG_A, "order-1"))
    other = await events.append(new_event(ORG_A, "order-2"))

    batch = await _claim(events)
    assert {first, other} == {c.event_id for c in batch}
    for claimed in batch:
        assert RecordResult.RECORDED == await _record(events, claimed, Published())

    [then] = await _claim(events)
    assert second == then.event_id
    assert RecordResult.RECORDED == await _record(events, then, Published())
    assert [] == await _claim(events)
    assert {first, second, other} == set(await events.published())


async def test_a_retried_event_holds_its_aggregate_back_until_it_goes(events: EventHarness) -> None:
    first = await events.append(new_event(ORG_A))
    second = await events.append(new_event(ORG_A))
    [claimed] = await _claim(events)

    assert RecordResult.RECORDED == await _record(events, claimed, _retry(events, 0.5))
    assert [] == await _claim(events)
    await events.sleep(0.6)

    [again] = await _claim(events)
    assert (first, 1) == (again.event_id, again.attempts)
    await _record(events, again, Published())
    [then] = await _claim(events)
    assert second == then.event_id


async def test_a_dead_letter_parks_its_aggregate_while_others_flow(events: EventHarness) -> None:
    await events.append(new_event(ORG_A, "order-1"))
    parked = await events.append(new_event(ORG_A, "order-1"))
    [claimed] = await _claim(events)
    dead = DeadLetter(reason=FailureClass.REJECTED)

    assert RecordResult.RECORDED == await _record(events, claimed, dead)
    other = await events.append(new_event(ORG_A, "order-2"))

    [flowing] = await _claim(events)
    assert other == flowing.event_id
    assert ("dead_lettered", 1) == (
        (view := await events.record_view(claimed.record_id)).state,
        view.attempts,
    )

    await events.release(claimed.record_id)
    [released] = await _claim(events)
    assert parked == released.event_id


async def test_a_republished_dead_letter_goes_before_its_aggregates_later_events(
    events: EventHarness,
) -> None:
    first = await events.append(new_event(ORG_A))
    second = await events.append(new_event(ORG_A))
    [claimed] = await _claim(events)
    await _record(events, claimed, DeadLetter(reason=FailureClass.REJECTED))

    await events.republish(claimed.record_id)

    [again] = await _claim(events)
    assert (first, 0) == (again.event_id, again.attempts)
    assert claimed.record_id != again.record_id
    await _record(events, again, Published())
    [then] = await _claim(events)
    assert second == then.event_id


# Fairness -------------------------------------------------------------------------------------


async def test_one_organizations_backlog_does_not_hold_another_back(events: EventHarness) -> None:
    for n in range(30):
        await events.append(new_event(ORG_A, f"order-{n}"))
    late = await events.append(new_event(ORG_B))

    batch = await _claim(events, limit=5)

    assert 5 == len(batch)
    assert late in {c.event_id for c in batch}


async def test_a_lone_organization_fills_the_batch(events: EventHarness) -> None:
    for n in range(8):
        await events.append(new_event(ORG_A, f"order-{n}"))

    assert 5 == len(await _claim(events, limit=5))
    assert 3 == len(await _claim(events, limit=5))


# Recording ------------------------------------------------------------------------------------


async def test_a_stale_token_a_wrong_attempt_or_a_repeat_loses_the_lease(
    events: EventHarness,
) -> None:
    await events.append(new_event(ORG_A))
    [claimed] = await _claim(events)

    assert RecordResult.LEASE_LOST == await _record(
        events, claimed, Published(), lease_token=uuid.uuid4()
    )
    assert RecordResult.LEASE_LOST == await _record(events, claimed, Published(), attempt=2)
    record = PublicationRecord(
        record_id=claimed.record_id,
        lease_token=claimed.lease_token,
        attempt=1,
        outcome=Published(),
    )
    assert [RecordResult.RECORDED, RecordResult.LEASE_LOST] == list(
        await events.store.record([record, record])
    )
    assert [(1, True, "published")] == await events.history(claimed.record_id)


async def test_an_expired_lease_is_claimed_again_and_the_old_holder_is_fenced(
    events: EventHarness,
) -> None:
    await events.append(new_event(ORG_A))
    [first] = await _claim(events, lease=timedelta(seconds=0.3))
    await events.sleep(0.4)

    [second] = await _claim(events)
    assert (first.record_id, 0) == (second.record_id, second.attempts)
    assert first.lease_token != second.lease_token
    assert RecordResult.LEASE_LOST == await _record(events, first, Published())
    assert RecordResult.RECORDED == await _record(events, second, Published())


async def test_a_release_does_not_spend_an_attempt(events: EventHarness) -> None:
    await events.append(new_event(ORG_A))
    [claimed] = await _claim(events)
    release = Release(
        available_at=events.now() + timedelta(seconds=0.3),
        failure_class=FailureClass.PROVIDER_SUSPENDED,
    )

    assert RecordResult.RECORDED == await _record(events, claimed, release)
    await events.sleep(0.4)

    [again] = await _claim(events)
    assert 0 == again.attempts
    assert [(1, False, "release")] == await events.history(claimed.record_id)


async def test_a_retry_time_in_the_past_is_refused_and_nothing_is_recorded(
    events: EventHarness,
) -> None:
    await events.append(new_event(ORG_A))
    [claimed] = await _claim(events)

    with pytest.raises(InvalidRequest):
        await _record(events, claimed, _retry(events, -1))

    assert [] == await events.history(claimed.record_id)
    assert "leased" == (await events.record_view(claimed.record_id)).state


async def test_a_provider_suspension_is_no_reason_to_dead_letter(events: EventHarness) -> None:
    await events.append(new_event(ORG_A))
    [claimed] = await _claim(events)

    with pytest.raises(InvalidRequest):
        await _record(events, claimed, DeadLetter(reason=FailureClass.PROVIDER_SUSPENDED))


async def test_final_records_stay_final(events: EventHarness) -> None:
    await events.append(new_event(ORG_A))
    [claimed] = await _claim(events)
    await _record(events, claimed, Published())

    assert RecordResult.LEASE_LOST == await _record(events, claimed, _retry(events))
    assert "published" == (await events.record_view(claimed.record_id)).state


async def test_a_bad_claim_is_refused_naming_the_parameter(events: EventHarness) -> None:
    with pytest.raises(InvalidRequest, match="p_limit"):
        await events.store.claim(owner="w1", limit=0, lease=LEASE)
    with pytest.raises(InvalidRequest, match="p_owner"):
        await events.store.claim(owner="", limit=1, lease=LEASE)
