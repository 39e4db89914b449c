"""Retention of tenant events (OB11; events.purge_events of 0020): published events
30 days after publication, never-published ones 90 days after their last dead letter was
released, in bounded batches, one sweeper at a time; never a live event, never an unresolved
dead letter (it parks its aggregate)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from uuid import UUID

import pytest
from psycopg import errors

from tests.contract.operator_harness import PostgresOperatorHarness
from tests.events_rows import EventRows

pytestmark = pytest.mark.integration

ORG = UUID("00000000-0000-4000-8000-0000000000aa")
PURGE = "SELECT events.purge_events('30 days', '90 days', %s)"
DAY = timedelta(days=1)


@pytest.fixture
async def staff(harness: PostgresOperatorHarness) -> UUID:
    identity_id = await harness.add_identity("staff@example.com")
    await harness.admin.grant_staff("staff@example.com")
    return identity_id


async def _purge(rows: EventRows, limit: int = 100) -> int:
    async with await rows.connect("outbox_worker") as conn:
        cursor = await conn.execute(PURGE, (limit,))
        row = await cursor.fetchone()
    assert row is not None
    return int(row[0])


async def _events(rows: EventRows) -> set[UUID]:
    return {row[0] for row in await rows.rows("SELECT id FROM events.domain_events")}


async def _released(rows: EventRows, staff: UUID, event: UUID) -> None:
    await rows.dead_letter(event)
    [record] = await rows.records(event)
    await rows.rows(
        "SELECT * FROM events.release_dead_letter(%s, %s, 'gone', %s)",
        staff,
        record,
        str(uuid.uuid4()),
    )


async def test_published_events_go_after_thirty_days_with_their_history(rows: EventRows):
    old = await rows.append(ORG, "a")
    recent = await rows.append(ORG, "b")
    await rows.publish(old, recent)
    await rows.age(old, 31 * DAY)
    await rows.age(recent, 29 * DAY)

    assert 1 == await _purge(rows)

    assert {recent} == await _events(rows)
    for table in ("outbox_records", "publication_attempts", "domain_event_publications"):
        [(count,)] = await rows.rows(f"SELECT count(*) FROM events.{table}")
        assert 1 == count, table


async def test_live_events_and_unresolved_dead_letters_are_never_deleted(
    rows: EventRows,
):
    pending = await rows.append(ORG, "p")
    dead = await rows.append(ORG, "d")
    await rows.dead_letter(dead)
    await rows.age(dead, 365 * DAY)
    await rows.age(pending, 365 * DAY)

    assert 0 == await _purge(rows)
    assert {pending, dead} == await _events(rows)


async def test_released_dead_letters_go_after_ninety_days(rows: EventRows, staff: UUID):
    old, recent = await rows.append(ORG, "o"), await rows.append(ORG, "r")
    await _released(rows, staff, old)
    await _released(rows, staff, recent)
    await rows.age(old, 91 * DAY)
    await rows.age(recent, 89 * DAY)

    assert 1 == await _purge(rows)

    assert {recent} == await _events(rows)
    [(dead_letters,)] = await rows.rows("SELECT count(*) FROM events.dead_letters")
    assert 1 == dead_letters
    # The audit outlives the event it names.
    [(audits,)] = await rows.rows("SELECT count(*) FROM events.operator_audit")
    assert 2 == audits


async def test_a_republished_event_goes_with_both_records_once_both_are_past(
    rows: EventRows, staff: UUID
):
    event = await rows.append(ORG, "x")
    await rows.dead_letter(event)
    [dead_record] = await rows.records(event)
    await rows.rows(
        "SELECT * FROM events.republish_dead_letter(%s, %s, %s, 'retry', 'k-1')",
        staff,
        dead_record,
        uuid.uuid4(),
    )
    await rows.publish(event)
    await rows.age(event, 31 * DAY)  # published 31 days ago, dead-lettered 31 days ago

    assert 0 == await _purge(rows)  # the dead record's 90 days are not over

    await rows.age(event, 60 * DAY)
    assert 1 == await _purge(rows)
    assert set() == await _events(rows)


async def test_the_sweep_deletes_in_bounded_batches_oldest_first(rows: EventRows):
    events = [await rows.append(ORG, f"b-{n}") for n in range(5)]
    await rows.publish(*events)
    for age, event in enumerate(events):
        await rows.age(event, (40 + age) * DAY)

    assert 2 == await _purge(rows, limit=2)
    assert set(events[:3]) == await _events(rows)
    assert 2 == await _purge(rows, limit=2)
    assert 1 == await _purge(rows, limit=2)
    assert 0 == await _purge(rows, limit=2)


async def test_a_blocked_event_does_not_hold_the_others_back(rows: EventRows, staff: UUID):
    # The oldest publication belongs to an event whose dead record is still recent.
    blocked = await rows.append(ORG, "k")
    await rows.dead_letter(blocked)
    [dead_record] = await rows.records(blocked)
    await rows.rows(
        "SELECT * FROM events.republish_dead_letter(%s, %s, %s, 'retry', 'k-1')",
        staff,
        dead_record,
        uuid.uuid4(),
    )
    await rows.publish(blocked)
    await rows.age(blocked, 40 * DAY)
    free = await rows.append(ORG, "f")
    await rows.publish(free)
    await rows.age(free, 35 * DAY)

    assert 1 == await _purge(rows, limit=1)
    assert {blocked} == await _events(rows)


async def test_one_sweeper_at_a_time(rows: EventRows, connect_as):
    event = await rows.append(ORG, "l")
    await rows.publish(event)
    await rows.age(event, 31 * DAY)
    async with connect_as(None, autocommit=False) as holder:
        await holder.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended('events.purge_events', 0))"
        )
        assert 0 == await _purge(rows)
    assert 1 == await _purge(rows)


@pytest.mark.parametrize(
    ("published", "dead_lettered", "limit", "named"),
    [
        ("30 days", "90 days", 0, "p_limit"),
        (None, "90 days", 10, "p_published"),
        ("30 days", "-1 day", 10, "p_dead_lettered"),
    ],
)
async def test_bad_arguments_are_refused_by_name(
    connect_as, published, dead_lettered, limit, named
):
    async with connect_as("outbox_worker") as conn:
        with pytest.raises(errors.InvalidParameterValue, match=named):
            await conn.execute(
                "SELECT events.purge_events(%s::interval, %s::interval, %s)",
                (published, dead_lettered, limit),
            )


async def _subscribe_consumer(rows: EventRows) -> None:
    await rows.rows(
        "SELECT events.register_consumer('demo.lagging', 'demo'),"
        " events.subscribe('demo.lagging', 'demo.thing_happened', 1, 1)"
    )


async def _deliveries(rows: EventRows, event: UUID) -> list[str]:
    found = await rows.rows(
        "SELECT state FROM events.consumer_deliveries WHERE domain_event_id = %s", event
    )
    return [row[0] for row in found]


async def test_an_event_a_consumer_has_not_handled_is_kept_past_retention(rows: EventRows):
    await _subscribe_consumer(rows)
    lagging = await rows.append(ORG, "lagging")
    await rows.publish(lagging)
    await rows.age(lagging, 31 * DAY)
    assert ["pending"] == await _deliveries(rows, lagging)

    assert 0 == await _purge(rows)

    assert {lagging} == await _events(rows)
    assert ["pending"] == await _deliveries(rows, lagging)


async def test_a_consumer_s_recent_dead_letter_keeps_its_event(rows: EventRows):
    await _subscribe_consumer(rows)
    kept, gone = await rows.append(ORG, "kept"), await rows.append(ORG, "gone")
    await rows.publish(kept, gone)
    for event, dead_for in ((kept, 10 * DAY), (gone, 91 * DAY)):
        await rows.age(event, 91 * DAY)
        async with await rows.connect(None) as conn:
            await conn.execute("SET session_replication_role = replica")
            await conn.execute(
                "UPDATE events.consumer_deliveries SET state = 'dead_lettered',"
                " dead_lettered_at = now() - %s, dead_letter_reason = 'rejected',"
                " available_at = now() WHERE domain_event_id = %s",
                (dead_for, event),
            )

    assert 1 == await _purge(rows)

    assert {kept} == await _events(rows)
