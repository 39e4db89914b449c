"""The peer: pgqueuer draining N no-op jobs (asyncpg driver), in its own database."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from importlib.metadata import version

import asyncpg
import attrs
from pgqueuer.db import AsyncpgDriver
from pgqueuer.domain.types import QueueExecutionMode
from pgqueuer.models import Job
from pgqueuer.qm import QueueManager
from pgqueuer.queries import Queries

from bench.databases import Database
from bench.harness import Drained, Setting, Stopwatch

ENTRYPOINT = "noop"
ENQUEUE_CHUNK = 5_000


@attrs.frozen(kw_only=True)
class PgqueuerDrain:
    """Enqueues ``jobs`` up front, then times ``QueueManager.run(mode=drain)`` until it returns.

    Each of ``managers`` queue managers has its own asyncpg connection (pgqueuer's own
    benchmark runs several); the entrypoint does nothing. The clock stops when every
    manager has returned, which pgqueuer does only after its completion log is flushed.
    """

    database: Database
    jobs: int
    batch_size: int = 100
    managers: int = 1

    def settings(self) -> dict[str, Setting]:
        """What this figure was measured with."""
        return {
            "pgqueuer": version("pgqueuer"),
            "driver": "asyncpg (AsyncpgDriver, one connection per queue manager)",
            "jobs": self.jobs,
            "batch_size": self.batch_size,
            "queue_managers": self.managers,
            "max_concurrent_tasks": "unlimited",
            "mode": "drain",
            "durability": "durable (default)",
        }

    async def install(self) -> None:
        """Install pgqueuer's schema with its own installer."""
        conn = await asyncpg.connect(**self.database.asyncpg_params())
        try:
            await Queries(AsyncpgDriver(conn)).install()
        finally:
            await conn.close()

    async def once(self) -> Drained:
        """Fill the queue, drain it, check it is empty; return the timing."""
        await self._fill()
        connections = [
            await asyncpg.connect(**self.database.asyncpg_params()) for _ in range(self.managers)
        ]
        try:
            managers = [_manager(conn) for conn in connections]
            with Stopwatch() as timing:
                await asyncio.gather(
                    *(
                        qm.run(
                            batch_size=self.batch_size,
                            mode=QueueExecutionMode.drain,
                            dequeue_timeout=timedelta(seconds=1),
                        )
                        for qm in managers
                    )
                )
            left = await connections[0].fetchval("SELECT count(*) FROM pgqueuer")
        finally:
            for conn in connections:
                await conn.close()
        if left:
            raise RuntimeError(f"pgqueuer drain left {left} jobs behind")
        return Drained(self.jobs, timing)

    async def _fill(self) -> None:
        conn = await asyncpg.connect(**self.database.asyncpg_params())
        try:
            queries = Queries(AsyncpgDriver(conn))
            await queries.clear_queue()
            await queries.clear_queue_log()
            await queries.clear_statistics_log()
            for start in range(0, self.jobs, ENQUEUE_CHUNK):
                size = min(ENQUEUE_CHUNK, self.jobs - start)
                await queries.enqueue([ENTRYPOINT] * size, [b""] * size, [0] * size)
            await conn.execute("VACUUM ANALYZE pgqueuer")
        finally:
            await conn.close()


def _manager(conn: asyncpg.Connection) -> QueueManager:
    qm = QueueManager(Queries(AsyncpgDriver(conn)))

    @qm.entrypoint(ENTRYPOINT)
    async def noop(_job: Job) -> None:
        return None

    return qm
