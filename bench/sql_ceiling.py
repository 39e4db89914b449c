"""The SQL-only ceiling: claim and record batches through our SQL functions, no per-message work."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import psycopg

from bench.databases import Database
from bench.harness import Drained, Setting, Stopwatch

Connection = psycopg.AsyncConnection[tuple[Any, ...]]


async def drain_on_connections(
    database: Database, lanes: int, loop: Callable[[Connection], Awaitable[int]]
) -> Drained:
    """Run ``loop`` on ``lanes`` autocommit connections at once, timed; the rows it drained."""
    connections = [
        await psycopg.AsyncConnection.connect(database.conninfo, autocommit=True)
        for _ in range(lanes)
    ]
    try:
        with Stopwatch() as timing:
            drained = sum(await asyncio.gather(*(loop(conn) for conn in connections)))
    finally:
        for conn in connections:
            await conn.close()
    return Drained(drained, timing)


CLAIM = "SELECT id, lease_token, attempt_count FROM outbox.claim_messages(%s, %s, %s)"
RECORD = """
SELECT count(*) FROM outbox.record_outcomes(
    %(ids)b, %(tokens)b, %(attempts)b, %(outcomes)b, %(classes)b::text[], %(codes)b,
    %(providers)b, %(receipts)b, %(retry_at)b::timestamptz[], %(attempted)b
)
"""


@attrs.frozen(kw_only=True)
class SqlCeiling:
    """``lanes`` connections each claim ``batch_size`` rows and record them all published,
    until none is left.

    The only Python between the two calls turns the claimed columns into the record
    arrays: it is what the database alone allows a worker with as many lanes.
    """

    database: Database
    batch_size: int = 100
    lanes: int = 2
    lease_seconds: float = 60.0

    def settings(self) -> dict[str, Setting]:
        """What this figure was measured with."""
        return {
            "driver": "psycopg (async, prepared statements)",
            "connections": self.lanes,
            "batch_size": self.batch_size,
            "statements_per_batch": "claim_messages + record_outcomes",
        }

    async def once(self) -> Drained:
        """Drain every due message; return how many and the timing."""
        return await drain_on_connections(self.database, self.lanes, self._loop)

    async def _loop(self, conn: psycopg.AsyncConnection[tuple[Any, ...]]) -> int:
        drained = 0
        while True:
            claimed = await (
                await conn.execute(
                    CLAIM, ("ceiling", self.batch_size, self.lease_seconds), prepare=True
                )
            ).fetchall()
            if not claimed:
                break
            size = len(claimed)
            ids, tokens, attempts = zip(*claimed, strict=True)
            recorded = await (
                await conn.execute(
                    RECORD,
                    {
                        "ids": list(ids),
                        "tokens": list(tokens),
                        "attempts": [attempt + 1 for attempt in attempts],
                        "outcomes": ["published"] * size,
                        "classes": [None] * size,
                        "codes": [""] * size,
                        "providers": ["noop"] * size,
                        "receipts": [""] * size,
                        "retry_at": [None] * size,
                        "attempted": [True] * size,
                    },
                    prepare=True,
                )
            ).fetchone()
            if not recorded or recorded[0] != size:
                raise RuntimeError("record_outcomes did not answer for every claimed row")
            drained += size
        return drained
