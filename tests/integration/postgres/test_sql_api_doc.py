"""The plain-SQL examples in docs/sql-api.md run as written: the producer's as outbox_producer,
the tenant events' onboarding as outbox_owner and its append as the module's role."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

DOC = Path(__file__).parents[3] / "docs" / "sql-api.md"


def _example() -> str:
    text = DOC.read_text(encoding="utf-8")
    match = re.search(r"<!-- example: producer-sql .*?-->\n```sql\n(.*?)```", text, re.DOTALL)
    assert match is not None, "the producer example block is missing from docs/sql-api.md"
    return match.group(1)


async def test_the_documented_producer_example_enqueues_a_message(connect_as):
    async with connect_as("outbox_producer") as conn:
        await conn.execute(_example().encode())
    async with connect_as() as conn:
        cursor = await conn.execute(
            "SELECT m.state, m.purpose, e.sealed IS NOT NULL FROM outbox.messages m"
            " JOIN outbox.envelopes e ON e.message_id = m.id"
            " WHERE m.id = '0190f5c2-7a1b-7c3d-8e4f-000000000001'"
        )
        assert ("pending", "sign_up", True) == await cursor.fetchone()


SALES_APP = "sales_app"
SALES_SETUP = f"""
DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{SALES_APP}') THEN
        CREATE ROLE {SALES_APP} NOLOGIN;
    END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
END $$;
CREATE SCHEMA sales;
CREATE TABLE sales.orders (id uuid PRIMARY KEY, organization_id uuid NOT NULL,
                           total_cents integer NOT NULL);
GRANT USAGE ON SCHEMA sales TO {SALES_APP};
GRANT INSERT ON sales.orders TO {SALES_APP};
"""


def _block(name: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    match = re.search(rf"<!-- example: {name} .*?-->\n```sql\n(.*?)```", text, re.DOTALL)
    assert match is not None, f"the {name} example block is missing from docs/sql-api.md"
    return match.group(1)


async def test_the_documented_events_example_onboards_a_module_and_appends(connect_as):
    async with connect_as() as conn:
        await conn.execute(SALES_SETUP.encode())
    async with connect_as("outbox_owner") as conn:
        await conn.execute(_block("events-onboarding").encode())
    async with connect_as(SALES_APP) as conn:
        await conn.execute(_block("events-producer-sql").encode())

    async with connect_as() as conn:
        cursor = await conn.execute(
            "SELECT e.event_type_code, e.producer_module_code, e.aggregate_id, r.state,"
            " (SELECT count(*) FROM sales.orders)"
            " FROM events.domain_events e JOIN events.outbox_records r ON r.domain_event_id = e.id"
        )
        assert [
            ("sales.order_placed", "sales", "0190f5c2-7a1b-7c3d-8e4f-0000000000c1", "pending", 1)
        ] == await cursor.fetchall()
    async with connect_as("outbox_worker") as conn:
        cursor = await conn.execute("SELECT payload FROM events.claim_outbox_batch('doc', 10, 30)")
        assert [({"total_cents": 4200, "currency": "EUR"},)] == await cursor.fetchall()
