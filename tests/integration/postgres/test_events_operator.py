"""The operator's SQL over the tenant events outbox (0020_events_operator.sql): backlog per
organization, dead letters, parked aggregates, an event's story, republish and release, the
staff versions and the metrics counts."""

from __future__ import annotations

import asyncio
import uuid
from uuid import UUID

import psycopg
import pytest
from psycopg import errors

from tests.contract.operator_harness import PostgresOperatorHarness
from tests.events_rows import EventRows

pytestmark = pytest.mark.integration

ORG_A = UUID("00000000-0000-4000-8000-00000000000a")
ORG_B = UUID("00000000-0000-4000-8000-00000000000b")
STAFF = "staff@example.com"

BACKLOG = (
    "SELECT organization_id, pending, leased, oldest_due_age_seconds IS NOT NULL, dead_letters,"
    " parked_aggregates FROM events.backlog(NULL, 100)"
)
REPUBLISH = "SELECT * FROM events.republish_dead_letter(%s, %s, %s, %s, %s)"
RELEASE = "SELECT * FROM events.release_dead_letter(%s, %s, %s, %s)"


@pytest.fixture
async def staff(harness: PostgresOperatorHarness) -> UUID:
    identity_id = await harness.add_identity(STAFF)
    await harness.admin.grant_staff(STAFF)
    return identity_id


async def test_the_backlog_counts_each_organization(rows: EventRows):
    first = await rows.append(ORG_A, "a-1")
    await rows.append(ORG_A, "a-1")  # waits behind the first
    await rows.append(ORG_A, "a-2")
    await rows.dead_letter(first)
    await rows.append(ORG_B, "b-1")
    assert 1 == len(await rows.claim(limit=1))

    backlog = await rows.rows(BACKLOG)

    by_org = {row[0]: row[1:] for row in backlog}
    assert {ORG_A, ORG_B} == set(by_org)
    assert (1, 1) == by_org[ORG_A][3:]
    assert (0, 0) == by_org[ORG_B][3:]
    assert (2, 1) == (
        sum(row[0] for row in by_org.values()),
        sum(row[1] for row in by_org.values()),
    )


async def test_a_parked_record_does_not_age_the_backlog(rows: EventRows):
    first = await rows.append(ORG_A, "a-1")
    await rows.append(ORG_A, "a-1")
    await rows.dead_letter(first)

    [(org, pending, leased, aged, dead, parked)] = await rows.rows(BACKLOG)

    assert (ORG_A, 1, 0, False, 1, 1) == (org, pending, leased, aged, dead, parked)


async def test_the_metrics_keep_ten_organizations_and_sum_the_rest(rows: EventRows):
    organizations = [uuid.uuid4() for _ in range(12)]
    for count, organization in enumerate(organizations, start=1):
        for n in range(count):
            await rows.append(organization, f"x-{n}")

    metrics = await rows.rows(
        "SELECT organization, pending FROM events.backlog_metrics() ORDER BY pending DESC"
    )

    assert 11 == len(metrics)
    top = {organization: pending for organization, pending in metrics if organization != "other"}
    assert {str(o): n for n, o in enumerate(organizations, start=1) if n > 2} == top
    assert ("other", 1 + 2) in metrics


async def test_the_metrics_have_an_other_row_when_nothing_waits(rows: EventRows):
    assert [("other", 0, 0, None, 0, 0)] == await rows.rows(
        "SELECT * FROM events.backlog_metrics()"
    )


async def test_dead_letters_page_newest_first_and_filter(rows: EventRows, staff: UUID):
    dead = []
    for n in range(3):
        event = await rows.append(ORG_A if n < 2 else ORG_B, f"d-{n}")
        await rows.dead_letter(event)
        dead.append((await rows.records(event))[0])
    await rows.rows(RELEASE, staff, dead[0], "ticket 1", "k-1")
    query = "SELECT dead_letter_id FROM events.list_dead_letters(NULL, %s, %s, %s, %s, %s)"

    newest = await rows.rows(query, None, False, None, None, 2)
    older = await rows.rows(query, None, False, newest[-1][0], None, 2)
    back = await rows.rows(query, None, False, None, older[0][0], 2)
    unresolved_of_a = await rows.rows(query, ORG_A, True, None, None, 10)

    # Each dead letter was recorded by a later statement than the one before.
    assert [(dead[2],), (dead[1],)] == newest
    assert [(dead[0],)] == older
    assert back == newest
    assert [(dead[1],)] == unresolved_of_a


async def test_a_cursor_must_name_a_dead_letter(rows: EventRows):
    with pytest.raises(errors.InvalidParameterValue, match="cursor"):
        await rows.rows(
            "SELECT * FROM events.list_dead_letters(NULL, NULL, false, %s, NULL, 10)",
            uuid.uuid4(),
        )


async def test_parked_aggregates_say_how_many_events_wait(rows: EventRows):
    first = await rows.append(ORG_A, "p-1")
    await rows.append(ORG_A, "p-1")
    await rows.append(ORG_A, "p-1")
    await rows.append(ORG_A, "other")
    await rows.dead_letter(first)
    [dead_record] = await rows.records(first)

    parked = await rows.rows(
        "SELECT organization_id, aggregate_type, aggregate_id, dead_letter_id, domain_event_id,"
        " event_type, reason, waiting FROM events.parked_aggregates(NULL, NULL, NULL, NULL, 10)"
    )

    assert [
        (ORG_A, "thing", "p-1", dead_record, first, "demo.thing_happened", "REJECTED", 2)
    ] == parked


async def test_an_event_shows_its_records_and_attempts_but_never_its_payload(
    rows: EventRows, staff: UUID
):
    event = await rows.append(ORG_A, "s-1")
    await rows.dead_letter(event)
    [dead_record] = await rows.records(event)
    new_record = uuid.uuid4()
    await rows.rows(REPUBLISH, staff, dead_record, new_record, "fixed the target", "k-1")
    await rows.publish(event)

    [detail] = await rows.rows("SELECT * FROM events.event_detail(NULL, %s)", event)
    records = await rows.rows(
        "SELECT id, state, republish_of, resolution, republished_as"
        " FROM events.event_records(NULL, %s)",
        event,
    )
    attempts = await rows.rows(
        "SELECT outbox_record_id, attempt, outcome FROM events.event_attempts(NULL, %s)", event
    )

    assert event == detail[0]
    assert "demo.thing_happened" == detail[2]
    assert '"n"' not in repr(detail)  # only the payload's size: 8 bytes of {"n": 1}
    assert 8 == detail[10]
    assert detail[12] is not None  # its publication sequence
    assert [
        (dead_record, "dead_lettered", None, "republished", new_record),
        (new_record, "published", dead_record, None, None),
    ] == records
    assert [(dead_record, 1, "dead_letter"), (new_record, 1, "published")] == attempts
    assert [] == await rows.rows("SELECT * FROM events.event_detail(NULL, %s)", uuid.uuid4())


async def test_a_republished_event_goes_before_the_aggregates_later_events(
    rows: EventRows, staff: UUID
):
    first = await rows.append(ORG_A, "r-1")
    later = await rows.append(ORG_A, "r-1")
    await rows.dead_letter(first)
    [dead_record] = await rows.records(first)
    assert [] == await rows.claim()  # parked

    new_record = uuid.uuid4()
    result = await rows.rows(REPUBLISH, staff, dead_record, new_record, "target fixed", "k-1")

    assert [("republished", new_record)] == result
    assert [(new_record, first)] == [(r[0], r[1]) for r in await rows.claim()]
    [(state, reason, resolution, by, republished_as)] = await rows.rows(
        "SELECT r.state, r.dead_letter_reason, d.resolution, d.resolved_by, d.republished_as"
        " FROM events.outbox_records AS r JOIN events.dead_letters AS d"
        " ON d.outbox_record_id = r.id WHERE r.id = %s",
        dead_record,
    )
    assert ("dead_lettered", "REJECTED", "republished", str(staff), new_record) == (
        state,
        reason,
        resolution,
        by,
        republished_as,
    )
    [(republish_of,)] = await rows.rows(
        "SELECT republish_of FROM events.outbox_records WHERE id = %s", new_record
    )
    assert dead_record == republish_of
    assert later not in [r[1] for r in await rows.claim()]


async def test_a_republish_is_audited_and_a_retry_of_its_key_adds_nothing(
    rows: EventRows, staff: UUID
):
    event = await rows.append(ORG_A, "i-1")
    await rows.dead_letter(event)
    [dead_record] = await rows.records(event)
    first_id, second_id = uuid.uuid4(), uuid.uuid4()

    first = await rows.rows(REPUBLISH, staff, dead_record, first_id, "why", "key-1")
    replay = await rows.rows(REPUBLISH, staff, dead_record, second_id, "why", "key-1")
    other_key = await rows.rows(REPUBLISH, staff, dead_record, second_id, "why", "key-2")
    reused = await rows.rows(RELEASE, staff, dead_record, "why", "key-1")

    assert [("republished", first_id)] == first
    assert [("replayed", first_id)] == replay
    assert [("already_republished", None)] == other_key
    assert [("key_reused",)] == reused
    assert 2 == len(await rows.records(event))
    assert [("republish", staff, None, dead_record, event, ORG_A, first_id, "why", "key-1")] == (
        await rows.rows(
            "SELECT action, actor_id, elevation_id, dead_letter_id, domain_event_id,"
            " organization_id, new_record_id, reason, idempotency_key FROM events.operator_audit"
        )
    )


async def test_a_release_lets_the_later_events_flow_and_keeps_the_dead_one_dead(
    rows: EventRows, staff: UUID
):
    first = await rows.append(ORG_A, "l-1")
    later = await rows.append(ORG_A, "l-1")
    await rows.dead_letter(first)
    [dead_record] = await rows.records(first)

    released = await rows.rows(RELEASE, staff, dead_record, "customer cancelled", "k-1")
    again = await rows.rows(RELEASE, staff, dead_record, "customer cancelled", "k-1")
    republish = await rows.rows(REPUBLISH, staff, dead_record, uuid.uuid4(), "no", "k-2")

    assert [("released",)] == released
    assert [("replayed",)] == again
    assert [("already_released", None)] == republish
    assert [later] == [r[1] for r in await rows.claim()]
    assert [("dead_lettered",)] == await rows.rows(
        "SELECT state FROM events.outbox_records WHERE domain_event_id = %s", first
    )


async def test_repairs_refuse_an_unknown_dead_letter_and_a_bad_reason(rows: EventRows, staff: UUID):
    assert [("not_found",)] == await rows.rows(RELEASE, staff, uuid.uuid4(), "why", "k-1")
    with pytest.raises(errors.InvalidParameterValue, match="p_reason"):
        await rows.rows(RELEASE, staff, uuid.uuid4(), "", "k-2")
    with pytest.raises(errors.InvalidParameterValue, match="p_idempotency_key"):
        await rows.rows(RELEASE, staff, uuid.uuid4(), "why", "")


async def test_a_repair_needs_an_active_staff_member(rows: EventRows):
    with pytest.raises(errors.InsufficientPrivilege, match="staff membership required"):
        await rows.rows(RELEASE, uuid.uuid4(), uuid.uuid4(), "why", "k-1")


async def test_concurrent_repairs_of_one_dead_letter_resolve_it_once(rows: EventRows, staff: UUID):
    event = await rows.append(ORG_A, "c-1")
    await rows.dead_letter(event)
    [dead_record] = await rows.records(event)

    results = await asyncio.gather(
        rows.rows(REPUBLISH, staff, dead_record, uuid.uuid4(), "one", "k-1"),
        rows.rows(RELEASE, staff, dead_record, "two", "k-2"),
    )

    outcomes = sorted(result[0][0] for result in results)
    assert outcomes in (
        ["already_released", "released"],
        ["already_republished", "republished"],
    )


async def test_a_repair_wakes_the_worker(rows: EventRows, staff: UUID, database_url: str):
    event = await rows.append(ORG_A, "n-1")
    await rows.dead_letter(event)
    [dead_record] = await rows.records(event)
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as listener:
        await listener.execute("LISTEN events_work")
        await rows.rows(RELEASE, staff, dead_record, "why", "k-1")
        notice = await anext(listener.notifies(timeout=10))
    assert ("events_work", "") == (notice.channel, notice.payload)


async def test_the_staff_versions_check_the_elevation_and_audit_it(
    rows: EventRows, staff: UUID, harness: PostgresOperatorHarness, connect_as
):
    event = await rows.append(ORG_A, "e-1")
    await rows.dead_letter(event)
    [dead_record] = await rows.records(event)
    digest = await harness.elevate(staff)

    async with connect_as("identity_service") as conn:
        with pytest.raises(errors.InsufficientPrivilege, match="fresh step-up required"):
            await conn.execute(
                "SELECT * FROM events.staff_backlog(%s, 'not-a-digest', 10)", (staff,)
            )
        cursor = await conn.execute(
            "SELECT * FROM events.staff_backlog(%s, %s, 10)", (staff, digest)
        )
        assert [ORG_A] == [row[0] for row in await cursor.fetchall()]
        cursor = await conn.execute(
            "SELECT * FROM events.staff_release_dead_letter(%s, %s, %s, 'why', 'k-1')",
            (staff, digest, dead_record),
        )
        assert [("released",)] == await cursor.fetchall()
    [(elevation_id,)] = await rows.rows("SELECT elevation_id FROM events.operator_audit")
    assert elevation_id is not None
