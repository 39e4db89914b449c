"""Readiness: the database answers, the role exists, and every migration file is applied."""

from __future__ import annotations

import psycopg
from psycopg import AsyncConnection
from psycopg import errors as pg_errors
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from outbox.adapters.postgres.error_translation import failure_code
from outbox.adapters.postgres.migrator import Migration, load_migrations
from outbox.application.ports import ReadinessReport

APPLIED = "SELECT version, checksum FROM outbox_meta.applied_migrations()"
# Whether ``role`` exists and the login is a member of it (to_regrole: NULL when absent).
ROLE = (
    "SELECT r.oid IS NOT NULL AND pg_has_role(current_user, r.oid, 'MEMBER')"
    " FROM (SELECT to_regrole(%s) AS oid) AS r"
)
_NOT_MIGRATED = (pg_errors.InvalidSchemaName, pg_errors.UndefinedFunction)


async def diagnose(url: str, role: str | None, *, connect_timeout: int = 2) -> ReadinessReport:
    """Why a pool cannot serve: one direct connection, then whether ``role`` is usable.

    A pool whose connections fail (``SET ROLE`` to a missing role, a refused login) only
    times out; this says which it is. Never raises for a database failure.
    """
    try:
        async with await AsyncConnection.connect(
            url, autocommit=True, connect_timeout=connect_timeout
        ) as conn:
            if role is None:
                return ReadinessReport(database_reachable=True)
            row = await (await conn.execute(ROLE, (role,), prepare=False)).fetchone()
    except psycopg.Error as error:
        return ReadinessReport(database_reachable=False, error_code=failure_code(error))
    usable = bool(row and row[0])
    return ReadinessReport(database_reachable=True, missing_role=None if usable else role)


class PostgresReadinessProbe:
    """Asks the process's pool; a pool that cannot connect is diagnosed (unreachable, or its
    role missing); pending or edited migrations make the service not ready."""

    def __init__(
        self,
        pool: AsyncConnectionPool[AsyncConnection],
        migrations: list[Migration] | None = None,
        timeout: float = 2.0,
        *,
        role: str | None = None,
    ) -> None:
        self._pool = pool
        self._migrations = load_migrations() if migrations is None else migrations
        self._timeout = timeout
        self._role = role

    async def check(self) -> ReadinessReport:
        """The report; a database that cannot be reached is reported, never raised."""
        try:
            async with self._pool.connection(timeout=self._timeout) as conn:
                cursor = await conn.execute(APPLIED)
                applied = {row[0]: row[1] for row in await cursor.fetchall()}
        except _NOT_MIGRATED:
            applied = {}  # no schema (or no ledger function) yet: every migration is pending
        except pg_errors.InsufficientPrivilege:
            return ReadinessReport(database_reachable=True, missing_role=self._role or "")
        except (psycopg.Error, PoolTimeout) as error:
            return await self._diagnose(error)
        pending = tuple(
            f"{m.version:04d}_{m.name}"
            for m in self._migrations
            if applied.get(m.version) != m.checksum
        )
        return ReadinessReport(database_reachable=True, pending_migrations=pending)

    async def _diagnose(self, error: Exception) -> ReadinessReport:
        """Why the pool failed: the role, the server's answer, or else the pool itself."""
        unreachable = ReadinessReport(
            database_reachable=False,
            error_code=getattr(error, "sqlstate", None) or type(error).__name__,
        )
        conninfo = self._pool.conninfo
        if not isinstance(conninfo, str):
            return unreachable
        report = await diagnose(conninfo, self._role, connect_timeout=max(1, round(self._timeout)))
        return unreachable if report.ready else report
