"""The claim serves higher priorities first and starves none; delayed sends wait.

Every test drives outbox.enqueue_message and outbox.claim_messages as the roles that own
those calls, on a real PostgreSQL; none waits for the clock.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import psycopg
import pytest
from psycopg import errors

from outbox.adapters.postgres.migrator import apply_migrations, load_migrations

pytestmark = pytest.mark.integration

LEASE = timedelta(minutes=5)
ENVELOPE = "v1.test-key.c2FsdHNhbHQ.bm9uY2Vub25jZQ.Y2lwaGVydGV4dA"

NOTIFICATIONS = """
SELECT outbox.enqueue_message(
    p_id => gen_random_uuid(), p_purpose => 'notification', p_channel => 'email',
    p_destination => 'person@example.com', p_subject_id => NULL, p_template => 'hello',
    p_priority => %s::integer
)
FROM generate_series(1, %s)
"""
CODES = """
SELECT outbox.enqueue_message(
    p_id => gen_random_uuid(), p_purpose => 'sign_up', p_channel => 'email',
    p_destination => 'person@example.com', p_subject_id => gen_random_uuid(),
    p_template => 'sign_up', p_sealed_secret => %s, p_expires_at => now() + interval '10 min'
)
FROM generate_series(1, %s)
"""
ONE = """
SELECT outbox.enqueue_message(
    p_id => gen_random_uuid(), p_purpose => 'notification', p_channel => 'email',
    p_destination => 'person@example.com', p_subject_id => NULL, p_template => 'hello',
    p_priority => %(priority)s::integer, p_not_before => %(not_before)s::timestamptz,
    p_expires_at => %(expires_at)s::timestamptz
)
"""
DELAYED_CODE = """
SELECT outbox.enqueue_message(
    p_id => gen_random_uuid(), p_purpose => 'sign_up', p_channel => 'email',
    p_destination => 'person@example.com', p_subject_id => gen_random_uuid(),
    p_template => 'sign_up', p_sealed_secret => %s, p_expires_at => now() + interval '2 hours',
    p_not_before => now() + interval '1 hour'
)
"""


async def _enqueue(connect_as, query: str, params: tuple[object, ...]) -> None:
    # One transaction per call, so each call's rows are older than the next call's.
    async with connect_as("outbox_producer") as conn:
        await conn.execute(query, params)


async def _claim_priorities(dispatch_store, limit: int) -> list[int]:
    claimed = await dispatch_store.claim(owner="w", limit=limit, lease=LEASE)
    return [int(message.priority) for message in claimed]


async def test_a_code_is_claimed_before_a_flood_of_older_notifications(connect_as, dispatch_store):
    await _enqueue(connect_as, NOTIFICATIONS, (1, 500))
    await _enqueue(connect_as, CODES, (ENVELOPE, 5))

    priorities = await _claim_priorities(dispatch_store, 10)

    # One fair slot (the oldest notification), then every code, then notifications again.
    assert [2, 2, 2, 2, 2, 1, 1, 1, 1, 1] == priorities


async def test_each_priority_is_served_from_the_highest_down(connect_as, dispatch_store):
    await _enqueue(connect_as, NOTIFICATIONS, (0, 5))
    await _enqueue(connect_as, NOTIFICATIONS, (1, 5))
    await _enqueue(connect_as, NOTIFICATIONS, (2, 5))

    first = await _claim_priorities(dispatch_store, 5)
    second = await _claim_priorities(dispatch_store, 5)
    third = await _claim_priorities(dispatch_store, 5)

    # The fair slot takes the oldest (a low one) each time; the rest go highest first.
    assert [2, 2, 2, 2, 0] == first
    assert [2, 1, 1, 1, 0] == second
    assert [1, 1, 0, 0, 0] == third


async def test_a_batch_of_one_is_strictly_by_priority(connect_as, dispatch_store):
    await _enqueue(connect_as, NOTIFICATIONS, (0, 1))
    await _enqueue(connect_as, NOTIFICATIONS, (2, 1))

    assert [2] == await _claim_priorities(dispatch_store, 1)
    assert [0] == await _claim_priorities(dispatch_store, 1)


async def test_low_priority_messages_are_not_starved_by_an_endless_stream_of_codes(
    connect_as, dispatch_store
):
    """Codes arrive faster than the worker claims them, yet every low message goes out: each
    batch of ten gives its fair slot to the oldest due message, and the low ones are oldest."""
    await _enqueue(connect_as, NOTIFICATIONS, (0, 30))
    lows_per_batch = []
    for _ in range(30):
        await _enqueue(connect_as, CODES, (ENVELOPE, 20))
        counts = Counter(await _claim_priorities(dispatch_store, 10))
        lows_per_batch.append(counts[0])

    assert [1] * 30 == lows_per_batch
    async with connect_as() as conn:
        cursor = await conn.execute(
            "SELECT count(*) FROM outbox.messages WHERE priority = 0 AND state = 'pending'"
        )
        assert (0,) == await cursor.fetchone()
        cursor = await conn.execute(
            "SELECT count(*) FROM outbox.messages WHERE priority = 2 AND state = 'pending'"
        )
        assert (30 * 20 - 30 * 9,) == await cursor.fetchone()


async def test_the_default_priority_follows_the_purpose(connect_as):
    await _enqueue(connect_as, CODES, (ENVELOPE, 1))
    async with connect_as("outbox_producer") as conn:
        await conn.execute(
            "SELECT outbox.enqueue_message(gen_random_uuid(), 'notification', 'email',"
            " 'p@example.com', NULL, 'hello')"
        )
    async with connect_as() as conn:
        cursor = await conn.execute(
            "SELECT purpose, priority FROM outbox.messages ORDER BY purpose"
        )
        assert [("notification", 1), ("sign_up", 2)] == await cursor.fetchall()


async def test_a_delayed_message_waits_until_not_before(connect_as, dispatch_store):
    async with connect_as("outbox_producer") as conn:
        await conn.execute(ONE, {"priority": None, "not_before": None, "expires_at": None})
        await conn.execute(DELAYED_CODE, (ENVELOPE,))

    claimed = await dispatch_store.claim(owner="w", limit=10, lease=LEASE)

    # The high code is delayed an hour, so only the normal notification is due.
    assert [1] == [int(message.priority) for message in claimed]
    async with connect_as() as conn:
        cursor = await conn.execute(
            "SELECT purpose, available_at - created_at FROM outbox.messages WHERE state = 'pending'"
        )
        [(purpose, delay)] = await cursor.fetchall()
    # The caller's now() is its transaction's start, a moment before the enqueue's own clock.
    assert "sign_up" == purpose
    assert timedelta(minutes=59) < delay <= timedelta(hours=1)


async def test_a_past_not_before_means_now_and_jumps_no_queue(connect_as):
    async with connect_as("outbox_producer") as conn:
        await conn.execute(
            ONE, {"priority": None, "not_before": "2000-01-01T00:00:00Z", "expires_at": None}
        )
    async with connect_as() as conn:
        cursor = await conn.execute("SELECT available_at = created_at FROM outbox.messages")
        assert (True,) == await cursor.fetchone()


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"priority": 3}, "p_priority: expected 0 (low), 1 (normal) or 2 (high), got 3"),
        ({"priority": -1}, "p_priority: expected 0 (low), 1 (normal) or 2 (high), got -1"),
        ({"not_before": "infinity"}, "p_not_before: expected a finite time, got infinity"),
        (
            {"not_before": "2100-01-02T00:00:00Z", "expires_at": "2100-01-01T00:00:00Z"},
            "p_not_before: the message would expire before it may be sent",
        ),
    ],
)
async def test_a_bad_priority_or_not_before_is_refused_by_name_and_writes_nothing(
    connect_as, values, message
):
    params = {"priority": None, "not_before": None, "expires_at": None} | values
    async with connect_as("outbox_producer") as conn:
        with pytest.raises(errors.InvalidParameterValue) as caught:
            await conn.execute(ONE, params)
    assert message == caught.value.diag.message_primary
    async with connect_as() as conn:
        cursor = await conn.execute("SELECT count(*) FROM outbox.messages")
        assert (0,) == await cursor.fetchone()


async def test_the_priority_scan_reads_its_index_in_claim_order_however_many_rows_wait(
    connect_as,
):
    """Many delayed high messages and a backlog of normal ones: the per-priority candidate
    query of claim_messages, planned generically as PL/pgSQL does, reads the priority index
    with both conditions as index bounds (no sort, no sequential scan), so it stops after the
    batch instead of walking every delayed row."""
    async with connect_as() as conn:
        await conn.execute(
            "INSERT INTO outbox.messages (id, purpose, channel, destination, template,"
            " available_at, created_at, priority)"
            " SELECT gen_random_uuid(), 'notification', 'email', 'p@example.com', 'hello',"
            " now() + (n % 2) * interval '1 day', now(), 1 + n % 2"
            " FROM generate_series(1, 40000) AS n"
        )
        await conn.execute("ANALYZE outbox.messages")
        await conn.execute("SET plan_cache_mode = force_generic_plan")
        await conn.execute(
            "PREPARE candidates (smallint, timestamptz, uuid[], integer) AS"
            " SELECT m.id FROM outbox.messages AS m"
            " WHERE m.state IN ('pending', 'leased') AND m.priority = $1"
            " AND m.claimable_at <= $2 AND m.id <> ALL ($3)"
            " ORDER BY m.claimable_at, m.created_at, m.id LIMIT $4 FOR UPDATE SKIP LOCKED"
        )
        cursor = await conn.execute(
            "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE candidates (2, now(), '{}', 100)"
        )
        [([plan],)] = await cursor.fetchall()

    scan = _only_scan(plan["Plan"])
    assert "messages_claim_by_priority" == scan["Index Name"]
    assert "priority" in scan["Index Cond"]
    assert "claimable_at" in scan["Index Cond"]
    # Not one of the 20,000 delayed high rows is read.
    assert 0 == scan["Actual Rows"]
    assert scan.get("Rows Removed by Filter", 0) == 0


def _only_scan(node: dict[str, object]) -> dict[str, object]:
    """The plan's one scan node, refusing a sort or a sequential scan on the way down."""
    assert node["Node Type"] not in {"Sort", "Seq Scan", "Bitmap Heap Scan"}, node["Node Type"]
    children = node.get("Plans")
    if not children:
        return node
    assert isinstance(children, list)
    assert 1 == len(children)
    return _only_scan(children[0])


async def test_the_migration_makes_live_secret_rows_high_and_leaves_the_rest_normal(
    empty_database_url,
):
    """An upgraded database: rows enqueued before 0013 get their purpose's priority if live."""
    before = [m for m in load_migrations() if m.version < 13]
    await apply_migrations(empty_database_url, before)
    async with await psycopg.AsyncConnection.connect(empty_database_url, autocommit=True) as conn:
        await conn.execute(CODES, (ENVELOPE, 2))
        await conn.execute(
            "SELECT outbox.enqueue_message(gen_random_uuid(), 'notification', 'email',"
            " 'p@example.com', NULL, 'hello')"
        )
        await conn.execute(
            "UPDATE outbox.messages SET state = 'published', published_at = now()"
            " WHERE id = (SELECT id FROM outbox.messages WHERE purpose = 'sign_up' LIMIT 1)"
        )
    await apply_migrations(empty_database_url)
    async with await psycopg.AsyncConnection.connect(empty_database_url) as conn:
        cursor = await conn.execute(
            "SELECT purpose, state, priority FROM outbox.messages ORDER BY purpose, state"
        )
        rows = await cursor.fetchall()

    assert [
        ("notification", "pending", 1),
        ("sign_up", "pending", 2),
        ("sign_up", "published", 1),
    ] == rows
