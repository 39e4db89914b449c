"""Units of work on a pooled connection: the identity store, the outbox writer and the
domain-event appender share one transaction, committed explicitly."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from uuid import UUID

import attrs
import psycopg
from psycopg import AsyncConnection
from psycopg.pq import TransactionStatus
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.event_appender import PostgresDomainEventAppender
from outbox.adapters.postgres.identity_errors import identity_errors
from outbox.adapters.postgres.identity_store import PostgresIdentityStore
from outbox.adapters.postgres.outbox_writer import PostgresOutboxWriter
from outbox.domain.events.domain_events import NewDomainEvent

# events.append_domain_event takes the module from the current role, else the login. A
# configured API login is a member of identity_service without SET ROLE, so the append acts
# as identity_service itself (mapped to module identity, 0022) for the rest of the transaction.
ACT_AS_IDENTITY = "SET LOCAL ROLE identity_service"


class TracedEventAppender:
    """Appends on the unit of work's connection as identity_service, with the request's trace
    context (if traced)."""

    def __init__(
        self, conn: AsyncConnection, trace_context: Callable[[], str | None] | None
    ) -> None:
        self._conn = conn
        self._appender = PostgresDomainEventAppender(conn)
        self._trace_context = trace_context

    async def append(self, event: NewDomainEvent) -> UUID:
        """Append ``event`` (module ``identity``); return its id."""
        if event.trace_context is None and self._trace_context is not None:
            event = attrs.evolve(event, trace_context=self._trace_context())
        with identity_errors():
            await self._conn.execute(ACT_AS_IDENTITY)
        return await self._appender.append(event)


class PostgresUnitOfWork:
    """One transaction: ``identity``, ``outbox`` and ``events`` run on the same connection."""

    def __init__(
        self,
        conn: AsyncConnection,
        *,
        trace_context: Callable[[], str | None] | None = None,
        staff: bool = False,
    ) -> None:
        self._conn = conn
        self.identity = PostgresIdentityStore(conn, staff=staff)
        self.outbox = PostgresOutboxWriter(conn, trace_context=trace_context)
        self.events = TracedEventAppender(conn, trace_context)

    async def commit(self) -> None:
        """Commit; raises StoreUnavailable (or Conflict) when the commit fails."""
        with identity_errors():
            await self._conn.commit()


class PostgresIdentityTransactions:
    """Opens units of work on connections of the API pool (role ``identity_service``), or
    with ``staff`` of the admin listener's pool (role ``staff_service``), whose sessions and
    elevations are staff ones.

    ``trace_context`` (tracing on) gives the enqueued messages the request's trace context.
    """

    def __init__(
        self,
        pool: AsyncConnectionPool[AsyncConnection],
        *,
        trace_context: Callable[[], str | None] | None = None,
        staff: bool = False,
    ) -> None:
        self._pool = pool
        self._trace_context = trace_context
        self._staff = staff

    @asynccontextmanager
    async def begin(self) -> AsyncIterator[PostgresUnitOfWork]:
        """A transaction that rolls back unless ``commit()`` was called.

        Raises StoreUnavailable when no connection can be had.
        """
        with identity_errors():
            async with self._pool.connection() as conn:
                await conn.set_autocommit(False)
                try:
                    yield PostgresUnitOfWork(
                        conn, trace_context=self._trace_context, staff=self._staff
                    )
                finally:
                    await _settle(conn)


async def _settle(conn: AsyncConnection) -> None:
    """Roll back what was not committed and hand the connection back in autocommit mode.

    A broken connection is left as it is: the pool notices and discards it.
    """
    try:
        if conn.info.transaction_status is not TransactionStatus.IDLE:
            await conn.rollback()
        await conn.set_autocommit(True)
    except psycopg.Error:
        await conn.close()
