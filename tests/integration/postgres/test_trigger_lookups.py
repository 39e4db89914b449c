"""Per-row triggers look their row up by key, however small the table was when planned (0051).

The attempt-sequence trigger ran once per recorded attempt and, planned while
``outbox.attempts`` was small, read that table sequentially every time: a record of 100
messages after 10,000 attempts spent three quarters of its time there. The tenant events'
per-row triggers look up a record, an event or a delivery the same way. Here each runs on
freshly migrated tables, so a plan made from their statistics would read them whole; the
calling transaction's own counters say how many sequential scans each table saw, after an
ANALYZE of the empty tables (as after a deploy) made reading them whole look cheapest.
"""

from __future__ import annotations

import uuid

import pytest

from tests.events_sql import SALES, append, claim, onboard, record
from tests.outbox_sql import CLAIM, ENVELOPE, RECORD, published

pytestmark = pytest.mark.integration

CODES = f"""
SELECT outbox.enqueue_message(
    p_id => gen_random_uuid(), p_purpose => 'sign_up', p_channel => 'email',
    p_destination => 'person@example.com', p_subject_id => gen_random_uuid(),
    p_template => 'sign_up', p_sealed_secret => '{ENVELOPE}'
)
FROM generate_series(1, %s)
"""
SEQUENTIAL = "SELECT pg_stat_get_xact_numscans(%s::regclass)"
ACME = uuid.UUID("0190aaaa-0000-7000-8000-000000000001")


async def _sequential(conn, table: str) -> int:
    [(scans,)] = await (await conn.execute(SEQUENTIAL, (table,))).fetchall()
    return int(scans)


async def test_recording_attempts_never_reads_the_attempts_table_whole(connect_as) -> None:
    async with connect_as() as conn:  # statistics of an empty table, as after a deploy
        await conn.execute("ANALYZE outbox.attempts")
    async with connect_as("outbox_producer") as conn:
        await conn.execute(CODES, (50,))
    async with connect_as(autocommit=False) as conn:
        before = await _sequential(conn, "outbox.attempts")
        await conn.execute("SET LOCAL ROLE outbox_worker")
        claimed = await (await conn.execute(CLAIM, (50,))).fetchall()
        results = await (await conn.execute(RECORD, published(claimed))).fetchall()
        await conn.execute("RESET ROLE")
        scans = await _sequential(conn, "outbox.attempts") - before
        await conn.commit()

    assert [("recorded",)] * 50 == results
    assert 0 == scans  # 50 before 0051: one per attempt row


async def test_appending_and_publishing_events_never_read_a_table_whole(connect_as) -> None:
    """The append (40 and 20 sequential scans for 20 events before 0051) and the record."""
    async with connect_as() as conn:
        await onboard(conn)
        await conn.execute(
            "ANALYZE events.outbox_records, events.domain_events, events.publication_attempts"
        )
    tables = ("events.outbox_records", "events.domain_events")
    async with connect_as(autocommit=False) as conn:
        await conn.execute(f"SET LOCAL ROLE {SALES}")
        before = {table: await _sequential(conn, table) for table in tables}
        for n in range(20):
            await append(conn, ACME, f"order-{n}")
        await conn.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the deferred checks, now
        appended = {table: await _sequential(conn, table) - before[table] for table in tables}
        await conn.commit()
    async with connect_as(autocommit=False) as conn:
        await conn.execute("SET LOCAL ROLE outbox_worker")
        claimed = await claim(conn, 20)
        before_record = await _sequential(conn, "events.outbox_records")
        results = await record(conn, claimed)
        recorded = await _sequential(conn, "events.outbox_records") - before_record
        await conn.commit()

    assert 20 == len(claimed)
    assert ["recorded"] * 20 == results
    assert dict.fromkeys(tables, 0) == appended
    assert 0 == recorded  # 22 before 0051: two for the record, one per row for its trigger
