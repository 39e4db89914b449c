"""The consumers' SQL (0021_consumers.sql, 0024_batched_fan_out.sql,
0050_batched_completions.sql): fan-out, claim, record (one attempt, or a batch's in one call),
replay, pause, lag, roles."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import psycopg
import pytest
from psycopg import errors

from tests.consumer_rows import consumer_role, define_type, publish, publish_many

pytestmark = pytest.mark.integration

ORG_A = uuid.UUID("00000000-0000-4000-8000-00000000000a")
ORG_B = uuid.UUID("00000000-0000-4000-8000-00000000000b")
CLAIM = "SELECT * FROM events.claim_consumer_deliveries(%s, 'test', %s, %s)"
RECORD = "SELECT events.record_consumer_processing_attempt(%s, %s, %s, %s, %s, %s, %s)"
RECORD_BATCH = (
    "SELECT result FROM events.record_consumer_processing_attempts(%s::uuid[], %s::uuid[],"
    " %s::integer[], %s::text[], %s::text[], %s::text[], %s::timestamptz[])"
)


@pytest.fixture
async def owner(connect_as) -> AsyncIterator[psycopg.AsyncConnection]:
    """A superuser connection with the shop module's types and consumer in place."""
    async with connect_as() as conn:
        await define_type(conn, "sales.order_placed", versions=(1, 2, 3))
        await define_type(conn, "sales.order_paid")
        await conn.execute("INSERT INTO events.modules (code) VALUES ('shop')")
        await conn.execute("SELECT events.register_consumer('shop.fulfilment', 'shop')")
        await conn.execute("SELECT events.subscribe('shop.fulfilment', 'sales.order_placed', 1, 2)")
        yield conn


@pytest.fixture
async def shop(owner) -> AsyncIterator[str]:
    """The role that runs the shop module's consumers."""
    async with consumer_role(owner, "shop") as role:
        yield role


async def _claim(conn, consumer="shop.fulfilment", limit=10, lease=60.0):
    cursor = await conn.execute(CLAIM, (consumer, limit, lease))
    columns = [c.name for c in cursor.description]
    return [dict(zip(columns, row, strict=True)) for row in await cursor.fetchall()]


async def _record(conn, row, outcome="completed", *, attempt=None, code="", retry_at=None):
    cursor = await conn.execute(
        RECORD,
        (
            row["delivery_id"],
            row["lease_token"],
            row["attempt_count"] + 1 if attempt is None else attempt,
            outcome,
            None if outcome == "completed" else "ValueError",
            code,
            retry_at,
        ),
    )
    result = await cursor.fetchone()
    return result[0]


async def _states(conn) -> list[tuple[int, str, int]]:
    cursor = await conn.execute(
        "SELECT publication_sequence, state, replay_round FROM events.consumer_deliveries"
        " ORDER BY delivery_sequence"
    )
    return await cursor.fetchall()


async def test_a_publication_fans_out_to_the_subscribed_versions_only(owner):
    one = await publish(owner, organization_id=ORG_A, event_type="sales.order_placed", version=1)
    two = await publish(owner, organization_id=ORG_A, event_type="sales.order_placed", version=2)
    await publish(owner, organization_id=ORG_A, event_type="sales.order_placed", version=3)
    await publish(owner, organization_id=ORG_A, event_type="sales.order_paid")

    cursor = await owner.execute(
        "SELECT domain_event_id, state FROM events.consumer_deliveries ORDER BY delivery_sequence"
    )
    # One aggregate, an ordered consumer: the second waits behind the first.
    assert [(one.event_id, "pending"), (two.event_id, "waiting")] == await cursor.fetchall()


async def test_a_batch_fans_out_in_one_statement_as_one_publication_at_a_time(owner):
    await owner.execute("SELECT events.register_consumer('shop.audit', 'shop', 5, false)")
    await owner.execute("SELECT events.subscribe('shop.audit', 'sales.order_placed', 1, 1)")
    await publish(owner, organization_id=ORG_A, event_type="sales.order_placed")  # order 1
    # Five more in one INSERT: orders 1, 0, 1, 0, 1 in publication order.
    await publish_many(
        owner, organization_ids=[ORG_A], event_type="sales.order_placed", count=5, aggregates=2
    )

    cursor = await owner.execute(
        "SELECT d.publication_sequence, c.code, d.aggregate_id, d.state, d.replay_round"
        " FROM events.consumer_deliveries AS d JOIN events.consumers AS c ON c.id = d.consumer_id"
        " ORDER BY d.delivery_sequence"
    )
    rows = await cursor.fetchall()
    # In publication order, then consumer order (ids are random: sort each publication's pair).
    assert [row[0] for row in rows] == sorted(row[0] for row in rows)
    ordered = [row for row in rows if row[1] == "shop.fulfilment"]
    unordered = [row for row in rows if row[1] == "shop.audit"]
    assert [
        (1, "1", "pending"),
        (2, "1", "waiting"),  # behind the live delivery of an earlier statement
        (3, "0", "pending"),
        (4, "1", "waiting"),
        (5, "0", "waiting"),  # behind an earlier publication of the same statement
        (6, "1", "waiting"),
    ] == [(row[0], row[2], row[3]) for row in ordered]
    assert [(n, "pending") for n in range(1, 7)] == [(row[0], row[3]) for row in unordered]


async def test_a_fan_out_that_writes_a_delivery_notifies_the_consumers(owner, connect_as):
    async with connect_as() as listener:
        await listener.execute("LISTEN consumers_work")
        await publish(owner, organization_id=ORG_A, event_type="sales.order_paid")  # nobody's
        await publish(owner, organization_id=ORG_A, event_type="sales.order_placed")
        heard = [n.channel async for n in listener.notifies(timeout=2.0, stop_after=2)]

    assert ["consumers_work"] == heard


async def test_a_retired_type_is_still_delivered(owner):
    await owner.execute(
        "UPDATE events.event_types SET retired_at = now() WHERE code = 'sales.order_placed'"
    )
    await publish(owner, organization_id=ORG_A, event_type="sales.order_placed")

    assert [(1, "pending", 0)] == await _states(owner)


async def test_a_second_delivery_of_an_event_to_a_consumer_in_one_round_is_refused(owner):
    """The table refuses a second delivery of one event to one consumer in one round."""
    await publish(owner, organization_id=ORG_A, event_type="sales.order_placed")

    with pytest.raises(errors.UniqueViolation) as caught:
        # The same consumer, event and round; everything else it may differ in, differs.
        await owner.execute(
            "INSERT INTO events.consumer_deliveries (consumer_id, domain_event_id, replay_round,"
            " organization_id, aggregate_type, aggregate_id, publication_sequence, state,"
            " available_at, created_at)"
            " SELECT consumer_id, domain_event_id, replay_round, organization_id, 'other',"
            " 'other', publication_sequence + 1, 'waiting', now() + interval '1 hour', now()"
            " FROM events.consumer_deliveries"
        )
    assert "consumer_deliveries_once_per_round" == caught.value.diag.constraint_name
    assert [(1, "pending", 0)] == await _states(owner)


async def test_a_publication_fanned_out_again_leaves_one_delivery(owner):
    """Fanning an event out again to a consumer in the same round writes no second delivery."""
    published = await publish(owner, organization_id=ORG_A, event_type="sales.order_placed")

    # The publication written again: the fan-out trigger runs a second time for the event.
    async with owner.transaction():
        await owner.execute(
            "CREATE TEMPORARY TABLE publication ON COMMIT DROP AS"
            " SELECT * FROM events.domain_event_publications WHERE domain_event_id = %s",
            (published.event_id,),
        )
        await owner.execute("DELETE FROM events.domain_event_publications")
        await owner.execute(
            "INSERT INTO events.domain_event_publications (domain_event_id, outbox_record_id,"
            " organization_id, event_type_code, contract_version, published_at)"
            " SELECT domain_event_id, outbox_record_id, organization_id, event_type_code,"
            " contract_version, published_at FROM publication"
        )

    cursor = await owner.execute(
        "SELECT domain_event_id, publication_sequence, state, replay_round"
        " FROM events.consumer_deliveries"
    )
    assert [(published.event_id, 1, "pending", 0)] == await cursor.fetchall()


@pytest.mark.parametrize(
    ("statement", "parameter"),
    [
        ("SELECT events.subscribe('shop.fulfilment', 'sales.nothing', 1, 2)", "p_event_type"),
        ("SELECT events.subscribe('shop.fulfilment', 'sales.order_paid', 3, 2)", "p_max_version"),
        ("SELECT events.subscribe('shop.fulfilment', 'sales.order_paid', 0, 2)", "p_min_version"),
        ("SELECT events.subscribe('shop.nobody', 'sales.order_paid', 1, 1)", "p_consumer"),
        ("SELECT events.register_consumer('shop.x', 'nowhere')", "p_owner_module"),
        ("SELECT events.register_consumer('sales.x', 'shop')", "p_code"),
        ("SELECT events.register_consumer('shop.x', 'shop', 0)", "p_max_attempts"),
        ("SELECT events.replay_consumer('shop.fulfilment')", "p_from_sequence"),
    ],
)
async def test_bad_arguments_are_refused_naming_the_parameter(owner, statement, parameter):
    with pytest.raises(errors.InvalidParameterValue) as caught:
        await owner.execute(statement)
    assert str(caught.value).startswith(parameter)


async def test_registration_is_idempotent(owner):
    cursor = await owner.execute("SELECT events.register_consumer('shop.fulfilment', 'shop', 3)")
    again = await cursor.fetchone()
    cursor = await owner.execute(
        "SELECT id, max_attempts FROM events.consumers WHERE owner_module_code = 'shop'"
    )
    assert [(again[0], 3)] == await cursor.fetchall()


async def test_a_completion_ends_the_delivery_and_frees_its_aggregate(owner, shop, connect_as):
    await publish(owner, organization_id=ORG_A, event_type="sales.order_placed")
    await publish(owner, organization_id=ORG_A, event_type="sales.order_placed")
    async with connect_as(shop) as conn:
        [first] = await _claim(conn)
        assert [] == await _claim(conn)  # the aggregate's second event waits
        assert "recorded" == await _record(conn, first)
        [second] = await _claim(conn)

    assert 2 == second["publication_sequence"]
    assert {"n": 1} == first["payload"]
    assert [(1, "completed", 0), (2, "leased", 0)] == await _states(owner)


async def test_an_unordered_consumer_takes_an_aggregate_s_events_together(owner, shop, connect_as):
    await owner.execute("SELECT events.register_consumer('shop.fulfilment', 'shop', 5, false)")
    await publish(owner, organization_id=ORG_A, event_type="sales.order_placed")
    await publish(owner, organization_id=ORG_A, event_type="sales.order_placed")
    async with connect_as(shop) as conn:
        assert 2 == len(await _claim(conn))


async def test_stale_tokens_expired_leases_and_wrong_attempts_lose_the_lease(
    owner, shop, connect_as
):
    await publish(owner, organization_id=ORG_A, event_type="sales.order_placed")
    async with connect_as(shop) as conn:
        [row] = await _claim(conn, lease=0.05)
        await conn.execute("SELECT pg_sleep(0.1)")
        assert "lease_lost" == await _record(conn, row)  # expired
        [again] = await _claim(conn)
        assert "lease_lost" == await _record(conn, row)  # the first token is stale now
        assert "lease_lost" == await _record(conn, again, attempt=2)
        assert "recorded" == await _record(conn, again)

    cursor = await owner.execute(
        "SELECT attempt, outcome, lease_token FROM events.consumer_processing_attempts"
    )
    assert [(1, "completed", again["lease_token"])] == await cursor.fetchall()


async def test_a_retry_waits_and_the_last_attempt_dead_letters(owner, shop, connect_as):
    await owner.execute("SELECT events.register_consumer('shop.fulfilment', 'shop', 2)")
    await publish(owner, organization_id=ORG_A, event_type="sales.order_placed")
    await publish(owner, organization_id=ORG_A, event_type="sales.order_placed")
    async with connect_as(shop) as conn:
        [row] = await _claim(conn)
        soon = "now() + interval '50 milliseconds'"
        cursor = await conn.execute(f"SELECT {soon}")
        (retry_at,) = await cursor.fetchone()
        assert "recorded" == await _record(conn, row, "retry", retry_at=retry_at)
        assert [] == await _claim(conn)
        await conn.execute("SELECT pg_sleep(0.1)")
        [row] = await _claim(conn)
        assert 1 == row["attempt_count"]
        cursor = await conn.execute("SELECT now() + interval '1 minute'")
        (later,) = await cursor.fetchone()
        assert "recorded" == await _record(conn, row, "retry", retry_at=later)
        [after] = await _claim(conn)  # a dead letter frees its aggregate

    assert 2 == after["publication_sequence"]
    cursor = await owner.execute(
        "SELECT state, dead_letter_reason, dead_letter_code FROM events.consumer_deliveries"
        " ORDER BY delivery_sequence LIMIT 1"
    )
    assert ("dead_lettered", "attempts_exhausted", "ValueError") == await cursor.fetchone()


async def test_a_rejection_dead_letters_now_and_final_rows_never_change(owner, shop, connect_as):
    await publish(owner, organization_id=ORG_A, event_type="sales.order_placed")
    async with connect_as(shop) as conn:
        [row] = await _claim(conn)
        assert "recorded" == await _record(conn, row, "dead_letter", code="bad_order")
    cursor = await owner.execute(
        "SELECT dead_letter_reason, dead_letter_code FROM events.consumer_deliveries"
    )
    assert ("rejected", "bad_order") == await cursor.fetchone()

    with pytest.raises(errors.IntegrityConstraintViolation):
        await owner.execute("UPDATE events.consumer_deliveries SET state = 'pending'")


async def _record_batch(conn, attempts) -> list[str]:
    """Record ``attempts`` (delivery id, token, attempt, outcome, class, code, retry time)."""
    columns = [list(column) for column in zip(*attempts, strict=True)] or [[]] * 7
    cursor = await conn.execute(RECORD_BATCH, columns)
    return [result for (result,) in await cursor.fetchall()]


def _completed(row) -> tuple:
    return (
        row["delivery_id"],
        row["lease_token"],
        row["attempt_count"] + 1,
        "completed",
        None,
        "",
        None,
    )


async def test_a_batch_records_each_attempt_in_one_call_and_answers_each_in_order(
    owner, shop, connect_as
):
    for aggregate in ("1", "2", "3", "1"):
        await publish(
            owner,
            organization_id=ORG_A,
            event_type="sales.order_placed",
            aggregate=("order", aggregate),
        )
    async with connect_as(shop) as conn:
        first, second, third = await _claim(conn)
        cursor = await conn.execute("SELECT now() + interval '1 minute'")
        (later,) = await cursor.fetchone()
        stale = (third["delivery_id"], uuid.uuid4(), 1, "completed", None, "", None)
        unknown = (uuid.uuid4(), uuid.uuid4(), 1, "completed", None, "", None)
        retry = (second["delivery_id"], second["lease_token"], 1, "retry", "ValueError", "", later)

        results = await _record_batch(
            conn, [_completed(first), unknown, retry, stale, _completed(first)]
        )

        assert ["recorded", "lease_lost", "recorded", "lease_lost", "lease_lost"] == results
        [after] = await _claim(conn)  # the first aggregate's second event, handed on
    assert 4 == after["publication_sequence"]
    assert [(1, "completed", 0), (2, "pending", 0), (3, "leased", 0), (4, "leased", 0)] == (
        await _states(owner)
    )
    cursor = await owner.execute(
        "SELECT a.outcome, a.retry_at FROM events.consumer_processing_attempts AS a"
        " ORDER BY a.outcome"
    )
    assert [("completed", None), ("retry", later)] == await cursor.fetchall()
    cursor = await owner.execute(
        "SELECT count(DISTINCT xmin::text) FROM events.consumer_processing_attempts"
    )
    assert (1,) == await cursor.fetchone()


async def test_an_empty_batch_records_nothing(shop, connect_as):
    async with connect_as(shop) as conn:
        assert [] == await _record_batch(conn, [])


@pytest.mark.parametrize(
    ("outcome", "error_class", "code", "retry", "parameter"),
    [
        ("done", None, "", None, "p_outcomes"),
        ("retry", "ValueError", "", None, "p_retry_at"),  # a retry without its time
        ("retry", "ValueError", "", "past", "p_retry_at"),
        ("dead_letter", "not a class", "", None, "p_error_classes"),
        ("dead_letter", "Reject", "x" * 101, None, "p_codes"),
        ("completed", None, "", None, "p_delivery_ids"),  # arrays of different lengths
    ],
)
async def test_a_bad_element_refuses_the_whole_batch(  # noqa: PLR0917 - the cases
    owner, shop, connect_as, outcome, error_class, code, retry, parameter
):
    for aggregate in ("1", "2"):
        await publish(
            owner,
            organization_id=ORG_A,
            event_type="sales.order_placed",
            aggregate=("order", aggregate),
        )
    async with connect_as(shop) as conn:
        good, other = await _claim(conn)
        cursor = await conn.execute("SELECT now() - interval '1 minute'")
        (past,) = await cursor.fetchone()
        element = (
            other["delivery_id"],
            other["lease_token"],
            1,
            outcome,
            error_class,
            code,
            past if retry == "past" else None,
        )
        columns = [list(column) for column in zip(_completed(good), element, strict=True)]
        if parameter == "p_delivery_ids":
            columns[2] = columns[2][:1]
        with pytest.raises(errors.InvalidParameterValue) as caught:
            await conn.execute(RECORD_BATCH, columns)
    assert str(caught.value).startswith(parameter)
    assert [(1, "leased", 0), (2, "leased", 0)] == await _states(owner)


async def test_an_attempt_out_of_sequence_is_refused_even_for_the_owner(owner, shop, connect_as):
    await publish(owner, organization_id=ORG_A, event_type="sales.order_placed")
    async with connect_as(shop) as conn:
        [row] = await _claim(conn)
    with pytest.raises(errors.IntegrityConstraintViolation):
        await owner.execute(
            "INSERT INTO events.consumer_processing_attempts"
            " (delivery_id, attempt, outcome, recorded_at, lease_token)"
            " VALUES (%s, 2, 'completed', now(), %s)",
            (row["delivery_id"], row["lease_token"]),
        )


async def test_a_paused_consumer_claims_nothing_and_cannot_complete(owner, shop, connect_as):
    await publish(owner, organization_id=ORG_A, event_type="sales.order_placed")
    async with connect_as(shop) as conn:
        [row] = await _claim(conn)
        cursor = await owner.execute("SELECT events.set_consumer_active('shop.fulfilment', false)")
        assert (True,) == await cursor.fetchone()
        await publish(owner, organization_id=ORG_B, event_type="sales.order_placed")
        assert [] == await _claim(conn)
        with pytest.raises(psycopg.Error) as caught:
            await _record(conn, row)
        assert "OXE04" == caught.value.sqlstate
        await owner.execute("SELECT events.set_consumer_active('shop.fulfilment', true)")
        assert "recorded" == await _record(conn, row)
        # Deliveries kept arriving while it was paused.
        [later] = await _claim(conn)
    assert ORG_B == later["organization_id"]


async def test_a_small_organization_is_served_beside_a_big_backlog(owner, shop, connect_as):
    await owner.execute("SELECT events.register_consumer('shop.fulfilment', 'shop', 5, false)")
    for n in range(60):
        await publish(
            owner, organization_id=ORG_A, event_type="sales.order_placed", aggregate=("o", str(n))
        )
    await publish(owner, organization_id=ORG_B, event_type="sales.order_placed")
    async with connect_as(shop) as conn:
        batch = await _claim(conn, limit=10)

    assert 10 == len(batch)
    assert ORG_B in {row["organization_id"] for row in batch}


async def test_concurrent_claims_are_disjoint_and_complete(owner, shop, connect_as):
    await owner.execute("SELECT events.register_consumer('shop.fulfilment', 'shop', 5, false)")
    for n in range(40):
        org = ORG_A if n % 2 else ORG_B
        await publish(
            owner, organization_id=org, event_type="sales.order_placed", aggregate=("o", str(n))
        )
    seen: list[uuid.UUID] = []
    async with connect_as(shop) as one, connect_as(shop) as two:
        while batches := [*await _claim(one, limit=7), *await _claim(two, limit=7)]:
            seen.extend(row["delivery_id"] for row in batches)
    assert 40 == len(seen) == len(set(seen))


async def test_a_claim_skips_deliveries_another_claimer_has_locked(owner, shop, connect_as):
    """A claim takes the due deliveries nobody holds and never waits on another claimer's lock."""
    await owner.execute("SELECT events.register_consumer('shop.fulfilment', 'shop', 5, false)")
    for n in range(3):
        await publish(
            owner, organization_id=ORG_A, event_type="sales.order_placed", aggregate=("o", str(n))
        )
    async with connect_as(shop, autocommit=False) as first, connect_as(shop) as second:
        # The first claimer holds the oldest delivery under its open transaction.
        [held] = await _claim(first, limit=1)
        # A claim that waited on that lock would fail here instead of hanging.
        await second.execute("SET lock_timeout = '5s'")
        taken = await _claim(second, limit=10)
        await first.commit()

    assert [2, 3] == [row["publication_sequence"] for row in taken]
    assert 1 == held["publication_sequence"]
    assert [(1, "leased", 0), (2, "leased", 0), (3, "leased", 0)] == await _states(owner)


async def test_replay_delivers_again_in_a_new_round_in_publication_order(owner, shop, connect_as):
    for _ in range(3):
        await publish(owner, organization_id=ORG_A, event_type="sales.order_placed")
    async with connect_as(shop) as conn:
        for _ in range(3):
            [row] = await _claim(conn)
            await _record(conn, row)
    cursor = await owner.execute("SELECT events.replay_consumer('shop.fulfilment', 2)")
    assert (2,) == await cursor.fetchone()
    cursor = await owner.execute(
        "SELECT events.replay_consumer('shop.fulfilment', p_since => now() - interval '1 hour')"
    )
    assert (3,) == await cursor.fetchone()

    assert [
        (1, "completed", 0),
        (2, "completed", 0),
        (3, "completed", 0),
        (2, "pending", 1),
        (3, "waiting", 1),
        (1, "waiting", 2),
        (2, "waiting", 2),
        (3, "waiting", 2),
    ] == await _states(owner)
    async with connect_as(shop) as conn:
        order = []
        while rows := await _claim(conn):
            order.extend((row["replay_round"], row["publication_sequence"]) for row in rows)
            for row in rows:
                await _record(conn, row)
    assert [(1, 2), (1, 3), (2, 1), (2, 2), (2, 3)] == order


async def test_lag_counts_what_is_not_done(owner, shop, connect_as):
    await publish(owner, organization_id=ORG_A, event_type="sales.order_placed")
    await publish(owner, organization_id=ORG_B, event_type="sales.order_placed")
    async with connect_as(shop) as conn:
        [row, _] = await _claim(conn)
        await _record(conn, row, "dead_letter", code="bad")
    async with connect_as("outbox_worker") as conn:
        cursor = await conn.execute(
            "SELECT consumer, subscriptions, events_behind, oldest_undelivered_seconds >= 0,"
            " dead_letters FROM events.consumer_lag() WHERE consumer LIKE 'shop.%'"
        )
        assert [("shop.fulfilment", ["sales.order_placed:1-2"], 1, True, 1)] == (
            await cursor.fetchall()
        )
    cursor = await owner.execute(
        "SELECT reason, code FROM events.consumer_dead_letters('shop.fulfilment')"
    )
    assert [("rejected", "bad")] == await cursor.fetchall()


async def test_retention_takes_the_deliveries_with_their_event(owner, shop, connect_as):
    published = await publish(owner, organization_id=ORG_A, event_type="sales.order_placed")
    async with connect_as(shop) as conn:
        [row] = await _claim(conn)
        await _record(conn, row)
    await owner.execute("DELETE FROM events.domain_events WHERE id = %s", (published.event_id,))

    assert [] == await _states(owner)


CONSUMER_CALLS = [
    "SELECT * FROM events.claim_consumer_deliveries('shop.fulfilment', 'w', 1, 60)",
    (
        "SELECT events.record_consumer_processing_attempt(gen_random_uuid(), gen_random_uuid(),"
        " 1, 'completed')"
    ),
    (
        "SELECT * FROM events.record_consumer_processing_attempts(ARRAY[gen_random_uuid()],"
        " ARRAY[gen_random_uuid()], '{1}', '{completed}', '{NULL}', '{\"\"}', '{NULL}')"
    ),
]
OWNER_CALLS = [
    "SELECT events.register_consumer('shop.other', 'shop')",
    "SELECT events.subscribe('shop.fulfilment', 'sales.order_paid', 1, 1)",
    "SELECT events.replay_consumer('shop.fulfilment', 1)",
    "SELECT events.set_consumer_active('shop.fulfilment', false)",
    "SELECT * FROM events.consumer_dead_letters('shop.fulfilment')",
]
TABLES = [
    "SELECT * FROM events.consumers",
    "SELECT * FROM events.consumer_subscriptions",
    "SELECT * FROM events.consumer_deliveries",
    "SELECT * FROM events.consumer_processing_attempts",
    "UPDATE events.consumer_deliveries SET state = 'pending'",
]
# identity_service runs module identity's consumer (0022), so it is tried below as another
# module's consumer role.
JOB_ROLES = ["outbox_worker", "outbox_producer", "outbox_runtime"]


async def _refused(connect_as, role: str, statement: str) -> None:
    async with connect_as(role) as conn:
        with pytest.raises(errors.InsufficientPrivilege) as caught:
            await conn.execute(statement)
    assert "42501" == caught.value.sqlstate


@pytest.mark.parametrize("role", JOB_ROLES)
async def test_no_other_job_role_may_run_a_consumer(owner, connect_as, role):
    for statement in [*CONSUMER_CALLS, *OWNER_CALLS, *TABLES]:
        await _refused(connect_as, role, statement)


async def test_identity_s_consumer_role_is_refused_another_module_s_consumer(owner, connect_as):
    for statement in [*CONSUMER_CALLS[:1], *OWNER_CALLS, *TABLES]:
        await _refused(connect_as, "identity_service", statement)


async def test_another_module_s_consumer_role_is_refused(owner, connect_as):
    async with consumer_role(owner, "billing") as billing:
        for statement in [*CONSUMER_CALLS[:1], *OWNER_CALLS, *TABLES]:
            await _refused(connect_as, billing, statement)
        await publish(owner, organization_id=ORG_A, event_type="sales.order_placed")
        cursor = await owner.execute("SELECT id FROM events.consumer_deliveries")
        (delivery_id,) = await cursor.fetchone()
        await _refused(
            connect_as,
            billing,
            f"SELECT events.record_consumer_processing_attempt('{delivery_id}',"
            " gen_random_uuid(), 1, 'completed')",
        )
        await _refused(
            connect_as,
            billing,
            "SELECT * FROM events.record_consumer_processing_attempts("
            f"ARRAY[gen_random_uuid(), '{delivery_id}'],"
            " ARRAY[gen_random_uuid(), gen_random_uuid()], '{1,1}', '{completed,completed}',"
            " '{NULL,NULL}', '{\"\",\"\"}', '{NULL,NULL}')",
        )


async def test_a_member_of_events_consumer_without_a_module_is_refused(owner, connect_as):
    role = f"outbox_test_unmapped_{uuid.uuid4().hex[:12]}"
    await owner.execute(f"CREATE ROLE {role} NOLOGIN IN ROLE events_consumer")
    try:
        for statement in CONSUMER_CALLS:
            await _refused(connect_as, role, statement)
    finally:
        await owner.execute(f"DROP ROLE {role}")


async def test_the_consumer_s_own_role_may_claim_and_record(shop, connect_as):
    async with connect_as(shop) as conn:
        for statement in CONSUMER_CALLS:
            await conn.execute(statement)
        for statement in [*OWNER_CALLS, *TABLES]:
            await _refused(connect_as, shop, statement)


async def test_an_appended_event_reaches_the_consumer_when_the_worker_publishes_it(
    owner, shop, connect_as
):
    """The whole path through the producer's and the worker's functions: the delivery is
    written in the worker's recording transaction, though the type was retired meanwhile."""
    producer = f"outbox_test_producer_{uuid.uuid4().hex[:12]}"
    await owner.execute(f"CREATE ROLE {producer} NOLOGIN")
    try:
        await owner.execute("SELECT events.map_producer_role(%s, 'sales')", (producer,))
        async with connect_as(producer) as conn:
            await conn.execute(
                "SELECT events.append_domain_event(%s, 'sales.order_placed', 2, 'order', '7',"
                " 'key-1', '{\"total\": 12}', now())",
                (ORG_A,),
            )
        # Retiring the type stops new appends, not the delivery of what was appended.
        await owner.execute("SELECT events.retire_event_type('sales.order_placed')")
        async with connect_as(producer) as conn:
            with pytest.raises(psycopg.Error) as retired:
                await conn.execute(
                    "SELECT events.append_domain_event(%s, 'sales.order_placed', 2, 'order', '8',"
                    " 'key-2', '{}', now())",
                    (ORG_A,),
                )
        assert "OXE02" == retired.value.sqlstate
        async with connect_as("outbox_worker") as conn:
            cursor = await conn.execute("SELECT * FROM events.claim_outbox_batch('w', 10, 60)")
            [claimed] = await cursor.fetchall()
            columns = [c.name for c in cursor.description]
            record = dict(zip(columns, claimed, strict=True))
            cursor = await conn.execute(
                "SELECT * FROM events.record_publication_attempt(%s, %s, %s, '{published}',"
                " '{NULL}', '{\"\"}', '{\"\"}', '{NULL}')",
                ([record["record_id"]], [record["lease_token"]], [record["attempts"] + 1]),
            )
            assert [("recorded",)] == await cursor.fetchall()
        async with connect_as(shop) as conn:
            [delivery] = await _claim(conn)
    finally:
        await owner.execute(f"DROP OWNED BY {producer}")
        await owner.execute(f"DROP ROLE {producer}")

    assert (record["event_id"], {"total": 12}, 2) == (
        delivery["domain_event_id"],
        delivery["payload"],
        delivery["contract_version"],
    )
