"""The events SQL-only ceiling: claim and record tenant events, no per-event Python work."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import attrs
import psycopg

from bench.databases import Database
from bench.harness import Drained, Setting
from bench.sql_ceiling import drain_on_connections

CLAIM = "SELECT record_id, lease_token, attempts FROM events.claim_outbox_batch(%s, %s, %s)"
# Only an aggregate's oldest live event is claimable: a lane that finds nothing due while
# another still holds a batch waits for its heads to pass on rather than stopping early.
LIVE = "SELECT EXISTS (SELECT 1 FROM events.outbox_records WHERE state IN ('pending', 'leased'))"
RECORD = """
SELECT count(*) FILTER (WHERE result = 'recorded') FROM events.record_publication_attempt(
    %(ids)b, %(tokens)b, %(attempts)b, %(outcomes)b, %(classes)b::text[], %(codes)b,
    %(targets)b, %(retry_at)b::timestamptz[]
)
"""


def published(claimed: Sequence[tuple[Any, ...]]) -> dict[str, list[Any]]:
    """RECORD's parameters: every row of CLAIM recorded published."""
    ids, tokens, attempts = (list(column) for column in zip(*claimed, strict=True))
    size = len(ids)
    return {
        "ids": ids,
        "tokens": tokens,
        "attempts": [attempt + 1 for attempt in attempts],
        "outcomes": ["published"] * size,
        "classes": [None] * size,
        "codes": [""] * size,
        "targets": [""] * size,
        "retry_at": [None] * size,
    }


@attrs.frozen(kw_only=True)
class EventsSqlCeiling:
    """``lanes`` connections each claim ``batch_size`` events and record them all published,
    until none is left.

    The only Python between the two calls turns the claimed columns into the record arrays:
    what the database alone allows an events lane with as many batches in flight.
    """

    database: Database
    batch_size: int = 100
    lanes: int = 2
    lease_seconds: float = 60.0

    def settings(self) -> dict[str, Setting]:
        """What this figure was measured with."""
        return {
            "driver": "psycopg (async, prepared statements, binary)",
            "connections": self.lanes,
            "batch_size": self.batch_size,
            "statements_per_batch": "events.claim_outbox_batch + events.record_publication_attempt",
        }

    async def once(self) -> Drained:
        """Publish every due event; return how many and the timing."""
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
                live = await (await conn.execute(LIVE)).fetchone()
                if not live or not live[0]:
                    break
                await asyncio.sleep(0.001)
                continue
            size = len(claimed)
            recorded = await (
                await conn.execute(RECORD, published(claimed), prepare=True)
            ).fetchone()
            if not recorded or recorded[0] != size:
                raise RuntimeError("record_publication_attempt did not record every claimed event")
            drained += size
        return drained
