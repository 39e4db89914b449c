"""HealthReadings from PostgreSQL's own statistics views and the outbox's health functions.

Read by ``outboxctl doctor`` as the database operator, and by the admin listener for its
gauges (``staff_service``, granted ``outbox.health_work()`` and ``events.consumer_lag()``):
``pg_stat_activity`` shows every session's transaction age only to a superuser or a member
of ``pg_read_all_stats``; another login sees its own sessions only, and the report says no
more than it can see. Nothing here shows a query's text (it may hold a customer's data).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.error_translation import translated_errors
from outbox.domain.operator.doctor import (
    ConsumerReading,
    HorizonHolder,
    LaneReading,
    Readings,
    RelayReading,
    SlotReading,
    TableReading,
)

# The tables every claim and record touches, whose dead rows a held horizon piles up.
HOT_TABLES = (
    ("outbox", "messages"),
    ("outbox", "attempts"),
    ("outbox", "envelopes"),
    ("events", "outbox_records"),
    ("events", "publication_attempts"),
    ("events", "consumer_deliveries"),
    ("events", "consumer_processing_attempts"),
)
HOLDERS = """
SELECT 'session', a.pid::text || ' ' || COALESCE(a.usename, '?'), COALESCE(a.state, ''),
       EXTRACT(epoch FROM pg_catalog.clock_timestamp() - a.xact_start)
FROM pg_catalog.pg_stat_activity AS a
WHERE a.backend_type = 'client backend'
  AND a.pid <> pg_catalog.pg_backend_pid()
  AND a.xact_start IS NOT NULL
  AND a.backend_xmin IS NOT NULL
UNION ALL
SELECT 'prepared transaction', p.gid, '',
       EXTRACT(epoch FROM pg_catalog.clock_timestamp() - p.prepared)
FROM pg_catalog.pg_prepared_xacts AS p
ORDER BY 4 DESC
"""
AUTOVACUUM = "SELECT pg_catalog.current_setting('autovacuum')::boolean"
TABLES = """
SELECT s.schemaname || '.' || s.relname, s.n_live_tup, s.n_dead_tup,
       pg_catalog.pg_total_relation_size(s.relid),
       COALESCE((SELECT o.option_value::boolean
                 FROM pg_catalog.pg_options_to_table(c.reloptions) AS o
                 WHERE o.option_name = 'autovacuum_enabled'), true),
       EXTRACT(epoch FROM pg_catalog.clock_timestamp()
                          - GREATEST(s.last_vacuum, s.last_autovacuum))
FROM pg_catalog.pg_stat_user_tables AS s
JOIN pg_catalog.pg_class AS c ON c.oid = s.relid
WHERE (s.schemaname, s.relname) IN (SELECT * FROM unnest(%s::text[], %s::text[]))
ORDER BY 1
"""
# Counts and ages only (0046_health_for_metrics.sql), so the admin listener reads them too.
LANES = """
SELECT lane, due, oldest_due_seconds, last_published_seconds FROM outbox.health_work()
"""
CONSUMERS = """
SELECT consumer, active, events_behind, oldest_undelivered_seconds FROM events.consumer_lag()
"""
SLOTS = """
SELECT s.slot_name::text, s.active,
       COALESCE(pg_catalog.pg_wal_lsn_diff(pg_catalog.pg_current_wal_lsn(), s.restart_lsn), 0)
FROM pg_catalog.pg_replication_slots AS s
ORDER BY 1
"""


def _seconds(value: Any) -> timedelta | None:
    return None if value is None else timedelta(seconds=float(value))


class PostgresHealthReadings:
    """HealthReadings on the database operator's pool, in one read-only transaction."""

    def __init__(self, pool: AsyncConnectionPool[AsyncConnection]) -> None:
        self._pool = pool

    async def read(self) -> Readings:
        """Every reading; raises StoreUnavailable when the database cannot be read."""
        schemas, names = [s for s, _ in HOT_TABLES], [n for _, n in HOT_TABLES]
        with translated_errors():
            async with self._pool.connection() as conn, conn.transaction():
                await conn.execute("SET TRANSACTION READ ONLY")
                holders = await _rows(conn, HOLDERS)
                [(autovacuum,)] = await _rows(conn, AUTOVACUUM)
                tables = await _rows(conn, TABLES, (schemas, names))
                lanes = await _rows(conn, LANES)
                consumers = await _rows(conn, CONSUMERS)
                slots = await _rows(conn, SLOTS)
        events = next((lane for lane in lanes if lane[0] == "events"), None)
        return Readings(
            autovacuum=bool(autovacuum),
            holders=[
                HorizonHolder(kind=k, name=n, state=s, age=_seconds(a) or timedelta(0))
                for k, n, s, a in holders
            ],
            tables=[
                TableReading(
                    name=name,
                    live_rows=int(live),
                    dead_rows=int(dead),
                    size_bytes=int(size),
                    autovacuum_enabled=bool(enabled),
                    last_vacuum_age=_seconds(vacuumed),
                )
                for name, live, dead, size, enabled, vacuumed in tables
            ],
            lanes=[
                LaneReading(lane=lane, due=int(due), oldest_due_age=_seconds(age))
                for lane, due, age, _ in lanes
            ],
            consumers=[
                ConsumerReading(
                    consumer=name,
                    active=bool(active),
                    events_behind=int(behind),
                    oldest_undelivered_age=_seconds(age),
                )
                for name, active, behind, age in consumers
            ],
            relay=RelayReading(
                last_published_age=_seconds(events[3]) if events else None,
                due=int(events[1]) if events else 0,
                oldest_due_age=_seconds(events[2]) if events else None,
            ),
            slots=[
                SlotReading(name=name, active=bool(active), retained_bytes=int(retained))
                for name, active, retained in slots
            ],
        )


async def _rows(
    conn: AsyncConnection, query: Any, params: tuple[Any, ...] = ()
) -> list[tuple[Any, ...]]:
    cursor = await conn.execute(query, params)
    return list(await cursor.fetchall())
