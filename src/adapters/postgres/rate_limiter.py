"""RateLimiter over identity.hit_rate_limit, one autocommit statement per hit."""

from __future__ import annotations

from datetime import datetime

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from adapters.postgres.identity_errors import identity_errors

HIT = "SELECT identity.hit_rate_limit(%s, %s, %s)"


class PostgresRateLimiter:
    """Counts hits in fixed windows; each hit commits on its own, whatever the request does."""

    def __init__(self, pool: AsyncConnectionPool[AsyncConnection]) -> None:
        self._pool = pool

    async def hit(self, *, key: str, window_start: datetime, window_end: datetime) -> int:
        """Count one hit on ``key`` in its window; return the total. Raises StoreUnavailable."""
        with identity_errors():
            async with self._pool.connection() as conn:
                cursor = await conn.execute(HIT, (key, window_start, window_end))
                row = await cursor.fetchone()
        return int(row[0]) if row is not None else 0
