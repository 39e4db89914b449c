"""N worker processes draining one queue: what ``outboxctl worker --processes N`` buys.

Each process is the benchmark's worker (``bench.worker_process serve``: the composition
root's own worker with the no-op provider). All N start and listen first (once, for every
repetition); then the queue is filled in one transaction, whose commit wakes them all at
once, and the clock runs from that commit until the last message's ``published_at`` (the
database's clock, the same machine's).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import psycopg

from bench import workload
from bench.databases import Database
from bench.dispatch_drain import DispatchDrain
from bench.harness import Setting, rate
from bench.worker import WorkerConfig
from bench.worker_process import start_serving

PUBLISHED = """
SELECT count(*), extract(epoch FROM max(published_at))
FROM outbox.messages WHERE state = 'published'
"""
DRAIN_TIMEOUT = 600.0


@attrs.frozen(kw_only=True)
class ProcessesDrain:
    """``processes`` worker processes on one database drain ``messages`` of a kind; msg/s.

    ``running()`` starts the processes once; each ``once(kind)`` then empties and fills the
    queue and times the drain, so repetitions do not pay for starting processes.
    """

    database: Database
    keyring: str = attrs.field(repr=False)
    messages: int
    config: WorkerConfig
    processes: int

    def settings(self, kind: str) -> dict[str, Setting]:
        """What a figure of ``kind`` was measured with."""
        return {
            "messages": self.messages,
            "kind": kind,
            "processes": self.processes,
            "worker": "bench.worker_process serve (worker_services, no-op provider)",
            "clock": "fill transaction's commit → last published_at",
            **self.config.settings(),
        }

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The worker processes, started and listening; stopped with SIGTERM afterwards."""
        with tempfile.TemporaryDirectory(prefix="outbox-bench-") as scratch:
            workers: list[asyncio.subprocess.Process] = []
            try:
                for n in range(self.processes):
                    # One at a time, so a failed start still stops the ones before it.
                    workers.append(await self._start(Path(scratch) / f"{n}.json"))  # noqa: PERF401
                yield
            finally:
                for worker in workers:
                    if worker.returncode is None:
                        worker.send_signal(signal.SIGTERM)
                for worker in workers:
                    await asyncio.wait_for(worker.wait(), 60)

    async def once(self, kind: str) -> float:
        """Empty and fill the queue with ``kind``, time the drain (inside ``running()``)."""
        await workload.empty(self.database.conninfo)
        maker = DispatchDrain(
            database=self.database,
            keyring=self.keyring,
            messages=self.messages,
            kind=kind,
            config=self.config,
        ).row_maker()
        started = await self._fill([maker(n) for n in range(self.messages)])
        return rate(self.messages, await self._until_published() - started)

    async def _start(self, out: Path) -> asyncio.subprocess.Process:
        return await start_serving(
            self.database.conninfo, out, self.config, self.keyring, within=120
        )

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
