"""Consumer throughput: the runner completing deliveries with a one-row effect, and its ceiling.

Both drain the same backlog: ``deliveries`` published events over several organizations and
aggregates, fanned out to one ordered consumer (`bench.effects`) whose handler inserts one
row per event. The runner is ``outboxctl consume --drain``'s (run_consumers: the worker loop
with a ConsumerTurn over ProcessDeliveries and PostgresConsumerStore); the ceiling issues the
same statements with no Python work between them.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import psycopg

from bench import events_workload
from bench.databases import Database
from bench.harness import Drained, Setting, Stopwatch
from bench.worker import quiet_logging
from outbox.application.events.consumer_handlers import ConsumerRegistry
from outbox.application.events.consumer_ports import DeliveredEvent
from outbox.entrypoints.bootstrap.consumers import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_CONCURRENCY,
    run_consumers,
)
from outbox.entrypoints.bootstrap.lanes import Lane, LaneRequest, consumers_lane
from outbox.entrypoints.bootstrap.parts import build_process_parts
from outbox.entrypoints.settings.tree import load_settings

EFFECTS = """
CREATE TABLE public.bench_effects (
    event_id uuid PRIMARY KEY,
    organization_id uuid NOT NULL,
    total bigint NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
)
"""
GRANT = f"GRANT INSERT ON public.bench_effects TO {events_workload.PRODUCER_ROLE}"
EFFECT = "INSERT INTO public.bench_effects (event_id, organization_id, total) VALUES (%s, %s, %s)"
CLAIM = """
SELECT delivery_id, domain_event_id, organization_id, payload, attempt_count, lease_token
FROM events.claim_consumer_deliveries(%s::text, %s::text, %s::integer, %s::double precision)
"""
RECORD = """
SELECT result FROM events.record_consumer_processing_attempts(
    %s::uuid[], %s::uuid[], %s::integer[], %s::text[], %s::text[], %s::text[], %s::timestamptz[]
)
"""
COMPLETED = (
    "SELECT count(*) FROM events.consumer_deliveries AS d"
    " JOIN public.bench_effects AS e ON e.event_id = d.domain_event_id"
    " WHERE d.state = 'completed'"
)
BATCH_SIZE = DEFAULT_BATCH_SIZE  # the runner's own defaults
CONCURRENCY = DEFAULT_CONCURRENCY
LEASE_SECONDS = 60.0


async def insert_effect(event: DeliveredEvent, conn: Any) -> None:
    """The bench handler: one effect row, in the delivery's transaction."""
    await conn.execute(EFFECT, (event.event_id, event.organization_id, event.payload["total"]))


async def ignore(event: DeliveredEvent, conn: Any) -> None:
    """The no-op handler: the delivery completes, nothing else is written."""


def noop_registry() -> ConsumerRegistry:
    """The bench consumer (``bench.effects``) with the no-op handler."""
    registry = ConsumerRegistry()
    registry.register(events_workload.CONSUMER, event_types=[events_workload.EVENT_TYPE])(ignore)
    return registry


@asynccontextmanager
async def running_consumers_lane(conninfo: str) -> AsyncIterator[Lane]:
    """The worker's consumers lane (outbox.entrypoints.bootstrap.lanes.consumers_lane) running
    the bench consumer with the no-op handler, listening. A consumer acts as its module's
    role: the bench module's producer role stands in for the API's here."""
    quiet_logging()
    settings = load_settings(
        {
            "OUTBOX_DATABASE_URL": conninfo,
            "OUTBOX_API_DB_ROLE": events_workload.PRODUCER_ROLE,
            "OUTBOX_DATA_DIR": tempfile.gettempdir(),
        }
    )
    parts = build_process_parts(settings, seal_keys=False, process_metrics=False)
    request = LaneRequest(settings=settings, parts=parts, owner="bench", consumers=noop_registry())
    async with consumers_lane(request) as lane:
        await lane.start_listening()
        yield lane


@attrs.frozen(kw_only=True)
class ConsumerBacklog:
    """``deliveries`` published events over the bench organizations and aggregates."""

    database: Database
    deliveries: int
    organizations: int
    aggregates: int

    def settings(self) -> dict[str, Setting]:
        """What the backlog is."""
        return {
            "deliveries": self.deliveries,
            "organizations": self.organizations,
            "aggregates": self.aggregates,
            "consumer": f"{events_workload.CONSUMER} (ordered: one live delivery per aggregate)",
            "handler": "one INSERT of an effect row, in the delivery's transaction",
        }

    async def prepare(self) -> None:
        """Onboard the bench module, its consumer and the effect table."""
        await events_workload.onboard(self.database.conninfo)
        await events_workload.subscribe_consumer(self.database.conninfo)
        async with await psycopg.AsyncConnection.connect(
            self.database.conninfo, autocommit=True
        ) as conn:
            await conn.execute(EFFECTS)
            await conn.execute(GRANT)

    async def load(self) -> None:
        """Empty everything, then publish ``deliveries`` events (one delivery each)."""
        await events_workload.empty(self.database.conninfo)
        async with await psycopg.AsyncConnection.connect(
            self.database.conninfo, autocommit=True
        ) as conn:
            await conn.execute("TRUNCATE public.bench_effects")
            await conn.execute("VACUUM ANALYZE public.bench_effects")
        await events_workload.bulk_published(
            self.database.conninfo,
            self.deliveries,
            organizations=self.organizations,
            aggregates=self.aggregates,
        )

    async def check(self) -> None:
        """Every delivery completed with its effect row."""
        async with await psycopg.AsyncConnection.connect(self.database.conninfo) as conn:
            row = await (await conn.execute(COMPLETED)).fetchone()
        done = int(row[0]) if row else 0
        if done != self.deliveries:
            raise RuntimeError(f"{done} of {self.deliveries} deliveries completed with an effect")


@attrs.frozen(kw_only=True)
class ConsumerRunner:
    """The application's runner: ProcessDeliveries batches until nothing is claimable."""

    backlog: ConsumerBacklog

    def settings(self) -> dict[str, Setting]:
        """What this figure was measured with."""
        return {
            "runner": "bootstrap.consumers.run_consumers (outboxctl consume --drain)",
            "loop": "WorkerLoop, ConsumerTurn over ProcessDeliveries, PostgresConsumerStore",
            "role": f"{events_workload.PRODUCER_ROLE} (module bench, member of events_consumer)",
            "batch_size": BATCH_SIZE,
            "concurrency": CONCURRENCY,
            "telemetry": "structlog JSON (info) to /dev/null + Prometheus registry",
            **self.backlog.settings(),
        }

    async def once(self) -> Drained:
        """Load the backlog, drain it with the runner, check every effect; return the timing."""
        await self.backlog.load()
        quiet_logging()
        registry = ConsumerRegistry()
        registry.register(events_workload.CONSUMER, event_types=[events_workload.EVENT_TYPE])(
            insert_effect
        )
        conninfo = self.backlog.database.conninfo
        settings = load_settings(
            {"OUTBOX_DATABASE_URL": conninfo, "OUTBOX_DATA_DIR": tempfile.gettempdir()}
        )
        with Stopwatch() as timing:
            totals = await run_consumers(
                settings,
                registry=registry,
                drain=True,
                role=events_workload.PRODUCER_ROLE,
                url=conninfo,
                handle_signals=False,
            )
        completed = totals[events_workload.CONSUMER].completed
        if completed != self.backlog.deliveries:
            raise RuntimeError(f"the runner completed {completed} of {self.backlog.deliveries}")
        await self.backlog.check()
        return Drained(completed, timing)


@attrs.frozen(kw_only=True)
class ConsumerCeiling:
    """The same claim, INSERT and record in plain SQL, batched as the runner batches: one
    connection claims a batch, ``concurrency`` connections each take a group of it in one
    transaction (a savepoint and an effect per delivery, one completion statement)."""

    backlog: ConsumerBacklog

    def settings(self) -> dict[str, Setting]:
        """What this figure was measured with."""
        return {
            "driver": "psycopg (async, prepared statements)",
            "batch_size": BATCH_SIZE,
            "connections": f"1 claiming + {CONCURRENCY} completing",
            "per_group": (
                "BEGIN; per delivery SAVEPOINT, INSERT effect, RELEASE;"
                " record_consumer_processing_attempts; COMMIT"
            ),
            **self.backlog.settings(),
        }

    async def once(self) -> Drained:
        """Load the backlog, drain it in plain SQL, check every effect; return the timing."""
        await self.backlog.load()
        conninfo = events_workload.producer_conninfo(self.backlog.database.conninfo)
        claimer = await psycopg.AsyncConnection.connect(conninfo, autocommit=True)
        workers = [
            await psycopg.AsyncConnection.connect(conninfo, autocommit=True)
            for _ in range(CONCURRENCY)
        ]
        try:
            with Stopwatch() as timing:
                completed = await self._drain(claimer, workers)
        finally:
            for conn in (claimer, *workers):
                await conn.close()
        if completed != self.backlog.deliveries:
            raise RuntimeError(f"the ceiling completed {completed} of {self.backlog.deliveries}")
        await self.backlog.check()
        return Drained(completed, timing)

    async def _drain(
        self,
        claimer: psycopg.AsyncConnection[tuple[Any, ...]],
        workers: list[psycopg.AsyncConnection[tuple[Any, ...]]],
    ) -> int:
        completed = 0
        while True:
            batch = await (
                await claimer.execute(
                    CLAIM,
                    (events_workload.CONSUMER, "ceiling", BATCH_SIZE, LEASE_SECONDS),
                    prepare=True,
                )
            ).fetchall()
            if not batch:
                return completed
            groups = [batch[i :: len(workers)] for i in range(len(workers))]
            done = await asyncio.gather(
                *(_complete(conn, group) for conn, group in zip(workers, groups, strict=True))
            )
            completed += sum(done)


def completions(claimed: list[tuple[Any, ...]]) -> tuple[list[Any], ...]:
    """RECORD's arguments completing every delivery of ``claimed`` (rows of CLAIM)."""
    n = len(claimed)
    return (
        [row[0] for row in claimed],
        [row[5] for row in claimed],
        [row[4] + 1 for row in claimed],
        ["completed"] * n,
        [None] * n,
        [""] * n,
        [None] * n,
    )


async def _complete(
    conn: psycopg.AsyncConnection[tuple[Any, ...]], group: list[tuple[Any, ...]]
) -> int:
    """One group in one transaction: a savepoint per effect, one completion statement."""
    if not group:
        return 0
    async with conn.transaction():
        for _, event, organization, payload, _, _ in group:
            async with conn.transaction():  # the savepoint
                await conn.execute(EFFECT, (event, organization, payload["total"]), prepare=True)
        answers = await (await conn.execute(RECORD, completions(group), prepare=True)).fetchall()
    if [answer[0] for answer in answers] != ["recorded"] * len(group):
        raise RuntimeError("record_consumer_processing_attempts lost a lease")
    return len(group)
