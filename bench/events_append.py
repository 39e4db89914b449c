"""Tenant event append: one event per transaction, beside a plain INSERT of the same row."""

from __future__ import annotations

import uuid

import attrs
import psycopg
from psycopg.types.json import Jsonb

from bench import events_workload
from bench.databases import Database
from bench.harness import Setting
from bench.producers import transactions_per_second
from outbox.adapters.postgres.event_appender import append_domain_event

# The bench-only variant without the wake-up: the function's own definition minus its
# pg_notify line, installed in that figure's database only (the function has no switch).
FUNCTION_DEFINITION = (
    "SELECT pg_catalog.pg_get_functiondef('events.append_domain_event'::regproc::oid)"
)
NOTIFY_LINE = "PERFORM pg_catalog.pg_notify('events_work', '');"
# Same columns, identity, defaults, checks and indexes (the idempotency key's unique one
# included) as events.domain_events: the ratio isolates what append_domain_event adds (the
# role's module, the type's checks, the aggregate's lock, the outbox record, the NOTIFY).
CREATE_TABLE = "CREATE TABLE public.plain_events (LIKE events.domain_events INCLUDING ALL)"
INSERT = """
INSERT INTO public.plain_events (
    id, organization_id, event_type_code, contract_version, producer_module_code,
    aggregate_type, aggregate_id, idempotency_key, payload, occurred_at, appended_at
) VALUES (%s, %s, 'bench.order_placed', 1, 'bench', 'order', %s, %s, %s, %s, %s)
"""


@attrs.frozen(kw_only=True)
class EventShape:
    """Which organization and aggregate the n-th event is for."""

    organizations: int
    aggregates: int

    def of(self, n: int) -> tuple[uuid.UUID, str]:
        """The n-th event's organization and aggregate id."""
        return events_workload.organization(n % self.organizations), f"order-{n % self.aggregates}"

    def settings(self) -> dict[str, Setting]:
        """The shape, for the report."""
        return {"organizations": self.organizations, "aggregates": self.aggregates}


@attrs.frozen(kw_only=True)
class EventAppend:
    """``total`` transactions from ``producers`` connections, each appending one event.

    The connections act as the bench module's producer role, as a producer module's do.
    """

    database: Database
    total: int
    producers: int
    shape: EventShape
    notify: bool = True

    def settings(self) -> dict[str, Setting]:
        """What this figure was measured with."""
        return {
            "driver": "psycopg (async), adapters.postgres.event_appender.append_domain_event",
            "pg_notify": "yes" if self.notify else "no (bench-only variant of append_domain_event)",
            "transactions": self.total,
            "events_per_transaction": 1,
            "producers": self.producers,
            "role": f"{events_workload.PRODUCER_ROLE} (mapped to module bench)",
            **self.shape.settings(),
        }

    async def prepare(self) -> None:
        """Register the bench module, its type and its producer role; drop NOTIFY if asked."""
        await events_workload.onboard(self.database.conninfo)
        if self.notify:
            return
        async with await psycopg.AsyncConnection.connect(
            self.database.conninfo, autocommit=True
        ) as conn:
            row = await (await conn.execute(FUNCTION_DEFINITION)).fetchone()
            definition = str(row[0]) if row else ""
            if NOTIFY_LINE not in definition:
                raise RuntimeError(
                    "append_domain_event no longer has the NOTIFY line this variant drops"
                )
            # CREATE OR REPLACE keeps the function's owner and grants
            await conn.execute(definition.replace(NOTIFY_LINE, "").encode())

    async def once(self) -> float:
        """Empty the events tables, then append; return transactions per second."""
        await events_workload.empty(self.database.conninfo)
        await events_workload.vacuum(self.database.conninfo)
        shape = self.shape

        async def append_one(conn: psycopg.AsyncConnection[object], n: int) -> None:
            organization, aggregate = shape.of(n)
            async with conn.transaction():
                await append_domain_event(
                    conn,  # type: ignore[arg-type]
                    organization_id=organization,
                    event_type=events_workload.EVENT_TYPE,
                    contract_version=1,
                    aggregate_type=events_workload.AGGREGATE_TYPE,
                    aggregate_id=aggregate,
                    idempotency_key=f"append-{n}",
                    payload=events_workload.order(n, aggregate),
                    occurred_at=events_workload.now(),
                )

        return await transactions_per_second(
            events_workload.producer_conninfo(self.database.conninfo),
            total=self.total,
            concurrency=self.producers,
            transaction=append_one,
        )


@attrs.frozen(kw_only=True)
class PlainEventInsert:
    """``total`` transactions, each BEGIN; one INSERT of an event row; COMMIT."""

    database: Database
    total: int
    producers: int
    shape: EventShape

    def settings(self) -> dict[str, Setting]:
        """What this figure was measured with."""
        return {
            "driver": "psycopg (async)",
            "transactions": self.total,
            "rows_per_transaction": 1,
            "producers": self.producers,
            "table": "LIKE events.domain_events INCLUDING ALL",
            **self.shape.settings(),
        }

    async def prepare(self) -> None:
        """Create the table (the database already holds our schema, migrated)."""
        async with await psycopg.AsyncConnection.connect(
            self.database.conninfo, autocommit=True
        ) as conn:
            await conn.execute(CREATE_TABLE)

    async def once(self) -> float:
        """Empty the table, then insert; return transactions per second."""
        async with await psycopg.AsyncConnection.connect(
            self.database.conninfo, autocommit=True
        ) as conn:
            await conn.execute("TRUNCATE public.plain_events")
            await conn.execute("VACUUM ANALYZE public.plain_events")
        shape = self.shape

        async def insert_one(conn: psycopg.AsyncConnection[object], n: int) -> None:
            organization, aggregate = shape.of(n)
            now = events_workload.now()
            async with conn.transaction():
                await conn.execute(
                    INSERT,
                    (
                        uuid.uuid4(),
                        organization,
                        aggregate,
                        f"append-{n}",
                        Jsonb(events_workload.order(n, aggregate)),
                        now,
                        now,
                    ),
                )

        return await transactions_per_second(
            self.database.conninfo,
            total=self.total,
            concurrency=self.producers,
            transaction=insert_one,
        )
