"""Readiness: the database answers and every migration file is applied unchanged."""

from __future__ import annotations

import psycopg
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from adapters.postgres.migrations import Migration, load_migrations
from application.ports import ReadinessReport

APPLIED = "SELECT version, checksum FROM outbox_meta.applied_migrations()"


class PostgresReadinessProbe:
    """Asks the API pool; pending or edited migrations make the service not ready."""

    def __init__(
        self,
        pool: AsyncConnectionPool[AsyncConnection],
        migrations: list[Migration] | None = None,
        timeout: float = 2.0,
    ) -> None:
        self._pool = pool
        self._migrations = load_migrations() if migrations is None else migrations
        self._timeout = timeout

    async def check(self) -> ReadinessReport:
        """The report; a database that cannot be reached is reported, never raised."""
        try:
            async with self._pool.connection(timeout=self._timeout) as conn:
                cursor = await conn.execute(APPLIED)
                applied = {row[0]: row[1] for row in await cursor.fetchall()}
        except (psycopg.Error, PoolTimeout):
            return ReadinessReport(database_reachable=False)
        pending = tuple(
            f"{m.version:04d}_{m.name}"
            for m in self._migrations
            if applied.get(m.version) != m.checksum
        )
        return ReadinessReport(database_reachable=True, pending_migrations=pending)
