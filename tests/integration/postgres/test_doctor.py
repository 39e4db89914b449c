"""``outboxctl doctor`` names what keeps the outbox from being a good citizen (issue 31).

Planted in a real database: a session idle in a REPEATABLE READ transaction (it holds the xmin
horizon), a consumer whose oldest delivery waits for an hour, and a relay that has published
nothing for an hour while an event is due. Each is named with what to do; a clean database
is healthy.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import psycopg
import pytest

from outbox.entrypoints.cli.exit_codes import ExitCode
from tests.consumer_rows import define_type, publish
from tests.outboxctl import run_outboxctl

pytestmark = pytest.mark.integration

ACME = uuid.UUID("0190cccc-0000-7000-8000-000000000001")
STALE_EVENT = """
WITH event AS (
    INSERT INTO events.domain_events (
        id, organization_id, event_type_code, contract_version, producer_module_code,
        aggregate_type, aggregate_id, idempotency_key, payload, occurred_at, appended_at
    ) VALUES (
        gen_random_uuid(), %(org)s, 'sales.order_placed', 1, 'sales', 'order', 'stale',
        'stale-1', '{}'::jsonb, now(), now()
    ) RETURNING id, append_sequence
)
INSERT INTO events.outbox_records (
    id, domain_event_id, organization_id, aggregate_type, aggregate_id, append_sequence,
    state, available_at, created_at, attempt_count
)
SELECT gen_random_uuid(), e.id, %(org)s, 'order', 'stale', e.append_sequence, 'pending',
       now() - interval '1 hour', now() - interval '1 hour', 0
FROM event AS e
"""


def _doctor(database_url: str, tmp_path: Path, *options: str) -> tuple[int, dict]:
    result = run_outboxctl(
        "doctor",
        "--json",
        *options,
        variables={"OUTBOX_DATABASE_URL": database_url, "OUTBOX_DATA_DIR": str(tmp_path)},
    )
    return result.returncode, json.loads(result.stdout)


async def test_a_clean_database_is_healthy(connect_as, database_url: str, tmp_path: Path) -> None:
    async with connect_as() as conn:
        cursor = await conn.execute("SHOW autovacuum")
        [(autovacuum,)] = await cursor.fetchall()

    code, report = await asyncio.to_thread(_doctor, database_url, tmp_path)

    # A server run with autovacuum off (some test servers are) is named, and nothing else.
    expected = [] if autovacuum == "on" else ["autovacuum"]
    assert expected == [finding["check"] for finding in report["findings"]]
    assert (ExitCode.OK if autovacuum == "on" else ExitCode.UNHEALTHY) == code
    assert {"security", "events", "consumers"} == {lane["lane"] for lane in report["lanes"]}
    assert "outbox.messages" in {table["name"] for table in report["tables"]}


async def test_a_held_horizon_a_lagging_consumer_and_a_stalled_relay_are_named(
    connect_as, database_url: str, tmp_path: Path
) -> None:
    async with connect_as() as conn:
        await define_type(conn, "sales.order_placed")
        await conn.execute("INSERT INTO events.modules (code) VALUES ('shop')")
        await conn.execute("SELECT events.register_consumer('shop.fulfilment', 'shop')")
        await conn.execute("SELECT events.subscribe('shop.fulfilment', 'sales.order_placed', 1, 1)")
        await publish(conn, organization_id=ACME, event_type="sales.order_placed")
        await conn.execute(
            "UPDATE events.consumer_deliveries SET created_at = now() - interval '1 hour'"
        )
        await conn.execute(
            "UPDATE events.domain_event_publications SET published_at = now() - interval '1 hour'"
        )
        await conn.execute(STALE_EVENT, {"org": ACME})
    holder = await psycopg.AsyncConnection.connect(database_url)
    try:
        await holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        await holder.execute("SELECT count(*) FROM outbox.messages")  # takes the snapshot
        await asyncio.sleep(1.5)
        code, report = await asyncio.to_thread(
            _doctor, database_url, tmp_path, "--horizon-seconds", "1"
        )
        pid = holder.info.backend_pid
    finally:
        await holder.close()

    by_check = {}
    for finding in report["findings"]:
        by_check.setdefault(finding["check"], []).append(finding)
    assert ExitCode.UNHEALTHY == code
    assert report["healthy"] is False
    [held] = [f for f in by_check["horizon"] if f["subject"].startswith(f"session {pid} ")]
    assert "idle in transaction" in held["subject"]
    assert "pg_terminate_backend" in held["advice"]
    [lagging] = by_check["consumer"]
    assert "consumer shop.fulfilment" == lagging["subject"]
    assert "1 events behind" in lagging["figure"]
    [stalled] = by_check["relay"]
    assert "critical" == stalled["severity"]
    assert "nothing publishes" in stalled["advice"]
