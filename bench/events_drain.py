"""The events lane draining a backlog of tenant events, as the worker composes it."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import attrs
import psycopg

from bench import events_workload
from bench.databases import Database
from bench.harness import Drained, Setting, Stopwatch
from bench.worker import quiet_logging
from outbox.application.delivery.batch import BatchTally
from outbox.entrypoints.bootstrap.lanes import Lane, LaneRequest, events_lane
from outbox.entrypoints.bootstrap.parts import build_process_parts
from outbox.entrypoints.settings.lanes import EVENTS, LaneSettings
from outbox.entrypoints.settings.tree import Settings, load_settings

PUBLISHED = "SELECT count(*) FROM events.outbox_records WHERE state = 'published'"
DELIVERIES = "SELECT count(*) FROM events.consumer_deliveries"


@attrs.frozen(kw_only=True)
class EventsBacklog:
    """``events`` pending events over the bench organizations and aggregates, and one
    subscribed consumer, so each publication also writes its delivery."""

    database: Database
    events: int
    organizations: int
    aggregates: int
    subscribed: bool = True  # False: no consumer, so a publication writes no delivery

    def settings(self) -> dict[str, Setting]:
        """What the backlog is."""
        return {
            "events": self.events,
            "organizations": self.organizations,
            "aggregates": self.aggregates,
            "order": "per aggregate: only its oldest live event is claimable",
            "fan_out": (
                f"1 subscribed consumer ({events_workload.CONSUMER}): a delivery each"
                if self.subscribed
                else "none (no consumer subscribed)"
            ),
        }

    async def prepare(self) -> None:
        """Onboard the bench module and subscribe its consumer (unless not subscribed)."""
        await events_workload.onboard(self.database.conninfo)
        if self.subscribed:
            await events_workload.subscribe_consumer(self.database.conninfo)

    async def load(self, count: int | None = None) -> int:
        """Empty the events tables and append ``count`` (default ``events``) events."""
        count = self.events if count is None else count
        await events_workload.empty(self.database.conninfo)
        await events_workload.bulk_load(
            self.database.conninfo,
            count,
            organizations=self.organizations,
            aggregates=self.aggregates,
        )
        return count

    async def check(self, count: int) -> None:
        """Every event published, each with its consumer delivery."""
        async with await psycopg.AsyncConnection.connect(self.database.conninfo) as conn:
            published = await (await conn.execute(PUBLISHED)).fetchone()
            deliveries = await (await conn.execute(DELIVERIES)).fetchone()
        found = (int(published[0]) if published else 0, int(deliveries[0]) if deliveries else 0)
        if found != (count, count if self.subscribed else 0):
            raise RuntimeError(f"published, delivered {found} of {count} events")


def lane_settings(conninfo: str) -> Settings:
    """The worker's settings for ``conninfo``, as the bench worker builds them."""
    return load_settings(
        {
            "OUTBOX_DATABASE_URL": conninfo,
            "OUTBOX_WORKER_DB_ROLE": "outbox_worker",  # the privileges production gives it
            "OUTBOX_DATA_DIR": tempfile.gettempdir(),
        }
    )


def lane_sizing(settings: Settings) -> LaneSettings:
    """The events lane's batch size, concurrency and batches in flight (the defaults)."""
    return settings.worker.lane_sizing[EVENTS]


@asynccontextmanager
async def running_events_lane(conninfo: str) -> AsyncIterator[Lane]:
    """The worker's events lane (outbox.entrypoints.bootstrap.lanes.events_lane), listening."""
    quiet_logging()
    settings = lane_settings(conninfo)
    parts = build_process_parts(settings, seal_keys=False, process_metrics=False)
    request = LaneRequest(settings=settings, parts=parts, owner="bench", drain=True)
    async with events_lane(request) as lane:
        await lane.start_listening()
        yield lane


@attrs.frozen(kw_only=True)
class EventsLaneDrain:
    """Times the events lane's WorkerLoop (drain mode) publishing the whole backlog."""

    backlog: EventsBacklog
    sizing: LaneSettings

    def settings(self) -> dict[str, Setting]:
        """What this figure was measured with."""
        return {
            "lane": "outbox.entrypoints.bootstrap.lanes.events_lane, role outbox_worker",
            "loop": "WorkerLoop(drain=True) over PublishDueEvents, no broker target",
            "batch_size": self.sizing.batch_size,
            "concurrency": self.sizing.concurrency,
            "parallel_batches": self.sizing.parallel_batches,
            "telemetry": "structlog JSON (info) to /dev/null + Prometheus registry",
            **self.backlog.settings(),
        }

    async def once(self, lane: Lane, count: int | None = None) -> Drained:
        """Load the backlog, drain it with the lane, check it; return the timing."""
        count = await self.backlog.load(count)
        loop = attrs.evolve(lane.loop, totals=BatchTally(), drain=True)
        with Stopwatch() as timing:
            totals = await loop.run()
        if totals.published != count:
            raise RuntimeError(f"the events lane published {totals.published} of {count}")
        await self.backlog.check(count)
        return Drained(count, timing)
