"""Drain rate against a small and a huge pending backlog, and the worker's peak memory."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import sys
import tempfile
from pathlib import Path

import attrs
import psycopg

from bench import workload
from bench.databases import Database
from bench.harness import Drained, Setting, Stopwatch
from bench.worker import Worker, WorkerConfig
from bench.worker_process import KEYRING_VARIABLE

PENDING = "SELECT count(*) FROM outbox.messages WHERE state = 'pending'"


@attrs.frozen(kw_only=True)
class BacklogDrain:
    """Times the worker dispatching ``drained`` messages out of ``pending`` bulk-loaded ones.

    The backlog is loaded once (INSERT … SELECT generate_series, then VACUUM ANALYZE) and
    each repetition takes the next ``drained`` messages, so the claim always starts from a
    full index. The small backlog is reloaded for every repetition.
    """

    database: Database
    pending: int
    drained: int
    config: WorkerConfig

    def settings(self) -> dict[str, Setting]:
        """What this figure was measured with."""
        return {
            "pending": self.pending,
            "drained_per_repetition": self.drained,
            "kind": "notification (bulk-loaded)",
            "loop": "DispatchDueMessages batches until `drained` claimed",
            **self.config.settings(),
        }

    async def load(self) -> None:
        """Empty the queue and bulk-load ``pending`` notifications."""
        await workload.empty(self.database.conninfo)
        await workload.bulk_load(self.database.conninfo, self.pending)

    async def once(self, worker: Worker, *, reload: bool) -> Drained:
        """Dispatch the next ``drained`` messages; return the timing."""
        if reload:
            await self.load()
        with Stopwatch() as timing:
            taken = await worker.take(self.drained)
        if taken < self.drained:
            raise RuntimeError(f"only {taken} of {self.drained} messages were due")
        return Drained(taken, timing)

    async def top_up(self) -> int:
        """Bring the pending count back to ``pending``; return how many pending there are."""
        async with await psycopg.AsyncConnection.connect(self.database.conninfo) as conn:
            row = await (await conn.execute(PENDING)).fetchone()
        missing = self.pending - (int(row[0]) if row else 0)
        if missing > 0:
            await workload.bulk_load(self.database.conninfo, missing)
        return self.pending


@attrs.frozen(kw_only=True)
class DrainProcessResult:
    """What the worker process reported after draining everything."""

    published: int
    seconds: float
    peak_rss_mb: float
    children_maxrss_mb: float


async def drain_in_process(
    database: Database, keyring: str, config: WorkerConfig
) -> DrainProcessResult:
    """Drain every pending message in a worker subprocess; return its count, time and peak RSS."""
    with tempfile.TemporaryDirectory(prefix="outbox-bench-") as scratch:
        out = Path(scratch) / "drain.json"
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.worker_process",
            "drain",
            database.conninfo,
            str(out),
            str(config.batch_size),
            str(config.concurrency),
            str(config.lanes),
            env={**os.environ, KEYRING_VARIABLE: keyring},
        )
        if await process.wait() != 0:
            raise RuntimeError("the draining worker process failed")
        reported = json.loads(out.read_text())
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return DrainProcessResult(
        published=int(reported["published"]),
        seconds=float(reported["seconds"]),
        peak_rss_mb=int(reported["peak_rss_kib"]) * 1024 / 1e6,
        children_maxrss_mb=children * 1024 / 1e6,
    )
