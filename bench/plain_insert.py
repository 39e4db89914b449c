"""The baseline producer: a plain one-row INSERT transaction on a copy of outbox.messages."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import attrs
import psycopg
from uuid_utils.compat import uuid7

from bench.databases import Database
from bench.harness import Setting
from bench.producers import transactions_per_second

# Same columns, types, defaults, checks and indexes as outbox.messages: the baseline pays
# for the row and its index entries, so the ratio isolates what enqueue_message adds.
CREATE_TABLE = "CREATE TABLE public.plain_messages (LIKE outbox.messages INCLUDING ALL)"
INSERT = """
INSERT INTO public.plain_messages
    (id, purpose, channel, destination, subject_id, template, params, locale,
     available_at, expires_at, created_at)
VALUES (%s, 'sign_up', 'email', %s, %s, 'sign_up_code', %s::jsonb, 'en', %s, NULL, %s)
"""


@attrs.frozen(kw_only=True)
class PlainInsert:
    """``total`` transactions, each BEGIN; one INSERT; COMMIT, from ``producers`` connections."""

    database: Database
    total: int
    producers: int

    def settings(self) -> dict[str, Setting]:
        """What this figure was measured with."""
        return {
            "driver": "psycopg (async)",
            "transactions": self.total,
            "rows_per_transaction": 1,
            "producers": self.producers,
            "table": "LIKE outbox.messages INCLUDING ALL",
        }

    async def prepare(self) -> None:
        """Create the table (the database already holds our schema, migrated)."""
        async with await psycopg.AsyncConnection.connect(
            self.database.conninfo, autocommit=True
        ) as conn:
            await conn.execute(CREATE_TABLE)

    async def once(self) -> float:
        """Empty the table, then insert; return transactions per second."""
        async with await psycopg.AsyncConnection.connect(
            self.database.conninfo, autocommit=True
        ) as conn:
            await conn.execute("TRUNCATE public.plain_messages")
            await conn.execute("VACUUM ANALYZE public.plain_messages")
        return await transactions_per_second(
            self.database.conninfo,
            total=self.total,
            concurrency=self.producers,
            transaction=_insert_one,
        )


async def _insert_one(conn: psycopg.AsyncConnection[object], n: int) -> None:
    now = datetime.now(UTC)
    params = json.dumps({"name": f"Person {n}"})
    async with conn.transaction():
        await conn.execute(
            INSERT,
            (uuid7(), f"person{n}@example.com", uuid7(), params, now, now),
        )
