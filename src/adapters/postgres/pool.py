"""Connection pools for the API and the worker: autocommit, prepared statements by default."""

from __future__ import annotations

from typing import TypedDict

from psycopg import AsyncConnection, sql
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.error_translation import translated_errors

# psycopg prepares a statement server-side once it has run this many times on a connection;
# 0 prepares on first use, which suits a hot path of a few statements run forever.
PREPARE_AT_FIRST_USE = 0


class ConnectionOptions(TypedDict):
    """What ``connection_options`` gives ``AsyncConnection.connect`` (typed for ``**``)."""

    autocommit: bool
    prepare_threshold: int | None


def connection_options(*, prepared_statements: bool) -> ConnectionOptions:
    """Keyword arguments for a connection; ``prepared_statements=False`` suits old PgBouncers."""
    return {
        "autocommit": True,
        "prepare_threshold": PREPARE_AT_FIRST_USE if prepared_statements else None,
    }


async def open_pool(
    url: str,
    *,
    min_size: int = 1,
    max_size: int = 10,
    prepared_statements: bool = True,
    role: str | None = None,
    connect_timeout: float = 30.0,
    checkout_timeout: float = 30.0,
) -> AsyncConnectionPool[AsyncConnection]:
    """Open a pool and wait until ``min_size`` connections are up.

    A caller waits at most ``checkout_timeout`` seconds for a connection afterwards; then
    the pool's PoolTimeout (an OperationalError) is translated to StoreUnavailable.

    ``role`` is set on every connection (``SET ROLE``) for a login role that is a member of
    outbox_worker or identity_service without inheriting its privileges. Raises
    StoreUnavailable when the database cannot be reached within ``connect_timeout`` seconds.
    """

    async def configure(conn: AsyncConnection) -> None:
        if role is not None:
            await conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))

    pool: AsyncConnectionPool[AsyncConnection] = AsyncConnectionPool(
        url,
        min_size=min_size,
        max_size=max_size,
        kwargs=dict(connection_options(prepared_statements=prepared_statements)),
        configure=configure,
        timeout=checkout_timeout,
        open=False,
        name="outbox",
    )
    with translated_errors():
        try:
            await pool.open(wait=True, timeout=connect_timeout)
        except BaseException:
            await pool.close()
            raise
    return pool
