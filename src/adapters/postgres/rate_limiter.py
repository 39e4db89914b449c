"""RateLimiter over identity.hit_rate_limit, identity.pace_destination and
identity.pace_wait, one autocommit statement per call."""

from __future__ import annotations

from datetime import datetime, timedelta

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.identity_errors import identity_errors
from outbox.domain.identity.rate_limits import Backoff

HIT = "SELECT identity.hit_rate_limit(%s, %s, %s)"
PACE = "SELECT identity.pace_destination(%s, %s, %s, %s, %s)"
PACE_WAIT = "SELECT identity.pace_wait(%s, %s)"


class PostgresRateLimiter:
    """Counts hits in fixed windows and paces sends; each call commits on its own, whatever
    the request does."""

    def __init__(self, pool: AsyncConnectionPool[AsyncConnection]) -> None:
        self._pool = pool

    async def hit(self, *, key: str, window_start: datetime, window_end: datetime) -> int:
        """Count one hit on ``key`` in its window; return the total. Raises StoreUnavailable."""
        with identity_errors():
            async with self._pool.connection() as conn:
                cursor = await conn.execute(HIT, (key, window_start, window_end))
                row = await cursor.fetchone()
        return int(row[0]) if row is not None else 0

    async def pace(self, *, key: str, now: datetime, backoff: Backoff) -> timedelta | None:
        """Count one send on ``key`` if its pace allows it, else the wait.

        Raises StoreUnavailable.
        """
        params = (key, now, backoff.first_wait, backoff.max_wait, backoff.quiet)
        with identity_errors():
            async with self._pool.connection() as conn:
                cursor = await conn.execute(PACE, params)
                row = await cursor.fetchone()
        return None if row is None or row[0] is None else max(row[0], timedelta(0))

    async def pace_wait(self, *, key: str, now: datetime) -> timedelta | None:
        """How long until ``key``'s pace allows its next send; None when it does now."""
        with identity_errors():
            async with self._pool.connection() as conn:
                cursor = await conn.execute(PACE_WAIT, (key, now))
                row = await cursor.fetchone()
        return None if row is None or row[0] is None else row[0]
