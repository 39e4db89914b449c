"""No statement of the hot path walks a whole index after an unlucky analyze (0051).

Under a held xmin horizon every index keeps an entry for every version since the hold began.
An ANALYZE that samples no pending or leased message sets every partial index over live
messages to about one entry, so reading one whole looks free: the resend's UPDATE walked a
claim index, the record's UPDATE another, the envelopes' deletes the whole key index. Here a
held horizon keeps 3,000 dead versions, the statistics say no message is live, and a resend,
a claim and a record each read fewer than a hundred index entries, as PostgreSQL's own
counters for the calling transaction have them.
"""

from __future__ import annotations

import pytest

from tests.outbox_sql import CLAIM, ENVELOPE, RECORD, published

pytestmark = pytest.mark.integration

DEAD_VERSIONS = 3000
CODES = f"""
SELECT outbox.enqueue_message(
    p_id => gen_random_uuid(), p_purpose => 'sign_up', p_channel => 'email',
    p_destination => 'person@example.com', p_subject_id => %s, p_template => 'sign_up',
    p_sealed_secret => '{ENVELOPE}', p_expires_at => now() + interval '10 minutes'
)
FROM generate_series(1, %s)
"""
INDEXES = (
    "outbox.messages_claim_order",
    "outbox.messages_claim_by_priority",
    "outbox.messages_live_expiry",
    "outbox.envelopes_pkey",
)
READ = "SELECT pg_stat_get_xact_tuples_returned(%s::regclass)"


async def _read(conn) -> dict[str, int]:
    read = {}
    for index in INDEXES:
        [(entries,)] = await (await conn.execute(READ, (index,))).fetchall()
        read[index] = int(entries)
    return read


async def _reading(connect_as, role: str, query: str, params: tuple[object, ...]):
    """Run ``query`` as ``role``; its rows and the index entries it read, by index."""
    async with connect_as(autocommit=False) as conn:
        before = await _read(conn)
        await conn.execute(f"SET LOCAL ROLE {role}")
        rows = await (await conn.execute(query, params)).fetchall()
        await conn.execute("RESET ROLE")
        after = await _read(conn)
        await conn.commit()
    return rows, {index: after[index] - before[index] for index in INDEXES}


async def test_no_statement_walks_the_dead_versions_after_an_unlucky_analyze(connect_as):
    async with connect_as("outbox_producer") as conn:
        await conn.execute(CODES.replace("%s", "gen_random_uuid()", 1), (DEAD_VERSIONS,))
    async with connect_as() as conn:  # an hour old: below the claim floor from now on
        await conn.execute(
            "UPDATE outbox.messages SET available_at = available_at - interval '1 hour'"
        )
        # The versions that update left are not the hold's: a scan that reaches them before
        # anything killed them would count them (they are as new as the floor's margin).
        await conn.execute("VACUUM outbox.messages")
    async with connect_as(autocommit=False) as holder:
        await holder.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        await holder.execute("SELECT count(*) FROM pg_catalog.pg_class")  # holds the horizon
        # Sent and published under the hold: a pending, a leased and a published version
        # of each, kept.
        claimed, _ = await _reading(connect_as, "outbox_worker", CLAIM, (DEAD_VERSIONS,))
        await _reading(connect_as, "outbox_worker", RECORD, published(claimed))
        async with connect_as() as conn:  # what autovacuum would do: no live row sampled
            await conn.execute("ANALYZE outbox.messages, outbox.envelopes")
        async with connect_as("outbox_worker") as conn:
            await conn.execute("SELECT outbox.refresh_claim_floor()")

        subject = "0190aaaa-0000-7000-8000-000000000001"
        _, first = await _reading(connect_as, "outbox_producer", CODES, (subject, 1))
        _, resend = await _reading(connect_as, "outbox_producer", CODES, (subject, 1))
        claimed, claim = await _reading(connect_as, "outbox_worker", CLAIM, (10,))
        results, record = await _reading(connect_as, "outbox_worker", RECORD, published(claimed))
        # Most claims at a steady load find nothing due.
        nothing, empty_claim = await _reading(connect_as, "outbox_worker", CLAIM, (10,))
        await holder.rollback()

    assert 1 == len(claimed)  # the resend withdrew the first code
    assert [("recorded",)] == results
    assert [] == nothing
    for statement, read in {
        "enqueue": first,
        "resend": resend,
        "claim": claim,
        "record": record,
        "claim finding nothing": empty_claim,
    }.items():
        # Before 0051 each of these read at least 3,000 entries of one of these indexes.
        assert all(entries < 100 for entries in read.values()), (statement, read)
