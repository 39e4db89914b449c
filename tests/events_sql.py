"""Plain-SQL helpers of the tenant events tests: onboard producer modules, append, claim, record.

Roles are cluster-wide, so the test producer roles are created once and shared by every test
database; what they may do (the mapping and its grants) lives in each database.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql

SALES = "events_test_sales"  # produces for module `sales`
BILLING = "events_test_billing"  # produces for module `billing`
UNMAPPED = "events_test_unmapped"  # a role nobody mapped
TEST_ROLES = (SALES, BILLING, UNMAPPED)
ORDER_PLACED = "sales.order_placed"
INVOICE_SENT = "billing.invoice_sent"

APPEND = "SELECT events.append_domain_event(%s, %s, %s, %s, %s, %s, %s, %s, %s)"
CLAIM = "SELECT * FROM events.claim_outbox_batch(%s, %s, %s, %s)"
# Every index entry the events tables' indexes returned to this transaction so far.
INDEX_ENTRIES = """
SELECT COALESCE(sum(pg_stat_get_xact_tuples_returned(c.oid)), 0)::bigint
FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
WHERE n.nspname = 'events' AND c.relkind = 'i'
"""
RECORD = (
    "SELECT result FROM events.record_publication_attempt("
    "%s::uuid[], %s::uuid[], %s::integer[], %s::text[], %s::text[], %s::text[], %s::text[],"
    " %s::timestamptz[])"
)
ONBOARD = """
SET ROLE outbox_owner;
SELECT events.register_module('sales');
SELECT events.register_module('billing');
SELECT events.register_event_type('sales.order_placed', 'sales', 'A customer placed an order');
SELECT events.register_event_type('billing.invoice_sent', 'billing', 'An invoice was sent');
SELECT events.publish_contract_version('sales.order_placed', 1);
SELECT events.publish_contract_version('billing.invoice_sent', 1);
SELECT events.map_producer_role('events_test_sales', 'sales');
SELECT events.map_producer_role('events_test_billing', 'billing');
RESET ROLE;
"""


async def ensure_roles(conn: psycopg.AsyncConnection) -> None:
    """Create the test producer roles when absent (another session may race us to it)."""
    for role in TEST_ROLES:
        cursor = await conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,))
        if await cursor.fetchone() is None:
            with contextlib.suppress(
                psycopg.errors.DuplicateObject, psycopg.errors.UniqueViolation
            ):
                await conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(role)))


async def onboard(conn: psycopg.AsyncConnection) -> None:
    """Register `sales` and `billing`, one type each at version 1, and map their roles.

    ``conn`` is a superuser autocommit connection.
    """
    await ensure_roles(conn)
    await conn.execute(ONBOARD.encode())


async def append(
    conn: psycopg.AsyncConnection,
    organization_id: uuid.UUID,
    aggregate_id: str = "order-1",
    *,
    key: str | None = None,
    event_type: str = ORDER_PLACED,
    version: int = 1,
    aggregate_type: str = "order",
    payload: dict[str, Any] | None = None,
    occurred_at: datetime | None = None,
    trace_context: str | None = None,
) -> uuid.UUID:
    """Append one event on ``conn`` (acting as a producer role); return its id."""
    cursor = await conn.execute(
        APPEND,
        (
            organization_id,
            event_type,
            version,
            aggregate_type,
            aggregate_id,
            key or str(uuid.uuid4()),
            json.dumps(payload if payload is not None else {"total": 1}),
            occurred_at or datetime.fromisoformat("2026-01-01T00:00:00+00:00"),
            trace_context,
        ),
    )
    row = await cursor.fetchone()
    assert row is not None
    return uuid.UUID(str(row[0]))


async def claim(
    conn: psycopg.AsyncConnection,
    limit: int = 10,
    *,
    owner: str = "w1",
    lease: float = 30.0,
    window: float | None = None,
) -> list[dict[str, Any]]:
    """Claim on ``conn`` (acting as outbox_worker): one dict per claimed record. A full claim,
    or with ``window`` (seconds) a recent one."""
    cursor = await conn.execute(CLAIM, (owner, limit, lease, window))
    assert cursor.description is not None
    names = [column.name for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in await cursor.fetchall()]


async def record(
    conn: psycopg.AsyncConnection,
    claimed: Sequence[dict[str, Any]],
    outcome: str = "published",
    *,
    failure_class: str | None = None,
    retry_at: datetime | None = None,
    attempt: int | None = None,
    token: uuid.UUID | None = None,
) -> list[str]:
    """Record one outcome for every claimed record; return the results in order."""
    cursor = await conn.execute(
        RECORD,
        (
            [c["record_id"] for c in claimed],
            [token or c["lease_token"] for c in claimed],
            [attempt if attempt is not None else c["attempts"] + 1 for c in claimed],
            [outcome for _ in claimed],
            [failure_class for _ in claimed],
            ["" for _ in claimed],
            ["" for _ in claimed],
            [retry_at for _ in claimed],
        ),
    )
    return [str(row[0]) for row in await cursor.fetchall()]


async def rows(conn: psycopg.AsyncConnection, query: str, *params: object) -> list[tuple[Any, ...]]:
    cursor = await conn.execute(query.encode(), params)
    return list(await cursor.fetchall())


async def notified(database_url: str, act: Callable[[], Awaitable[object]]) -> bool:
    """Whether ``act``, run while a session listens, sent an events_work notification."""
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as listener:
        await listener.execute("LISTEN events_work")
        await act()
        async for _ in listener.notifies(timeout=1.0, stop_after=1):
            return True
    return False


@contextlib.asynccontextmanager
async def counting_calls(
    connect_as: Callable[..., Any], role: str
) -> AsyncIterator[psycopg.AsyncConnection]:
    """A transaction acting as ``role`` that counts its own function calls
    (``pg_stat_get_xact_function_calls``); committed when the block ends."""
    async with connect_as(autocommit=False) as conn:
        await conn.execute("SET LOCAL track_functions = 'all'")
        await conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(role)))
        yield conn
        await conn.commit()
