"""N worker processes draining one queue: what ``outboxctl worker --processes N`` buys.

Each process is the benchmark's worker (``bench.worker_process serve``: the composition
root's own worker with the no-op provider). All N start and listen first; then the queue is
filled in one transaction, whose commit wakes them all at once, and the clock runs from that
commit until the last message's ``published_at`` (the database's clock, the same machine's).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

import attrs
import psycopg

from bench import workload
from bench.databases import Database
from bench.dispatch_drain import DispatchDrain
from bench.harness import Setting, rate
from bench.worker import WorkerConfig
from bench.worker_process import KEYRING_VARIABLE, READY

PUBLISHED = """
SELECT count(*), extract(epoch FROM max(published_at))
FROM outbox.messages WHERE state = 'published'
"""
DRAIN_TIMEOUT = 600.0


@attrs.frozen(kw_only=True)
class ProcessesDrain:
    """``processes`` worker processes drain ``messages`` of one kind; returns msg/s."""

    database: Database
    keyring: str = attrs.field(repr=False)
    messages: int
    kind: str  # "notification" or "sealed_code"
    config: WorkerConfig
    processes: int

    def settings(self) -> dict[str, Setting]:
        """What this figure was measured with."""
        return {
            "messages": self.messages,
            "kind": self.kind,
            "processes": self.processes,
            "worker": "bench.worker_process serve (worker_services, no-op provider)",
            "clock": "fill transaction's commit → last published_at",
            **self.config.settings(),
        }

    async def once(self) -> float:
        """Start the processes, fill the queue, time the drain, stop them; messages/s."""
        await workload.empty(self.database.conninfo)
        rows = [
            DispatchDrain(
                database=self.database,
                keyring=self.keyring,
                messages=self.messages,
                kind=self.kind,
                config=self.config,
            ).row_maker()(n)
            for n in range(self.messages)
        ]
        with tempfile.TemporaryDirectory(prefix="outbox-bench-") as scratch:
            outs = [Path(scratch) / f"{n}.json" for n in range(self.processes)]
            workers = [await self._start(out) for out in outs]
            try:
                started = await self._fill(rows)
                finished = await self._until_published()
            finally:
                for worker in workers:
                    if worker.returncode is None:
                        worker.send_signal(signal.SIGTERM)
                for worker in workers:
                    await asyncio.wait_for(worker.wait(), 60)
        return rate(self.messages, finished - started)

    async def _start(self, out: Path) -> asyncio.subprocess.Process:
        config = self.config
        worker = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.worker_process",
            "serve",
            self.database.conninfo,
            str(out),
            str(config.batch_size),
            str(config.concurrency),
            str(config.lanes),
            env={**os.environ, KEYRING_VARIABLE: self.keyring},
            stdout=asyncio.subprocess.PIPE,
        )
        assert worker.stdout is not None
        line = await asyncio.wait_for(worker.stdout.readline(), 120)
        if line.decode().strip() != READY:
            raise RuntimeError(f"a worker process did not start: {line!r}")
        return worker

    async def _fill(self, rows: list[dict[str, object]]) -> float:
        """Enqueue every row in one transaction; the moment its commit returned."""
        async with await psycopg.AsyncConnection.connect(self.database.conninfo) as conn:
            async with conn.cursor() as cursor:
                await cursor.executemany(workload.ENQUEUE, rows)
            await conn.commit()
            return time.time()

    async def _until_published(self) -> float:
        """Wait until every message is published; the last one's published_at (epoch)."""
        deadline = time.monotonic() + DRAIN_TIMEOUT
        async with await psycopg.AsyncConnection.connect(
            self.database.conninfo, autocommit=True
        ) as conn:
            while True:
                row = await (await conn.execute(PUBLISHED)).fetchone()
                if row is not None and int(row[0]) >= self.messages:
                    return float(row[1])
                if time.monotonic() > deadline:
                    raise RuntimeError(f"only {row[0] if row else 0} of {self.messages} published")
                await asyncio.sleep(0.05)
