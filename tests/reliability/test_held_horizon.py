"""A session holds the xmin horizon while tenant events are appended and published (issue 31).

A report in ``REPEATABLE READ`` (one read, then idle in transaction) keeps every dead row of
the database from being vacuumed for ``horizon_hold_seconds`` (10 s here, 10 minutes in the
long profile) while producers append at a steady pace to several aggregates and events
workers publish them. The outbox may slow down; it may not lose, duplicate or reorder: every
event is published once, in append order within its aggregate, with no attempt under a stale
lease, and the hold really held (the holder's snapshot kept the horizon the whole time).
``docs/benchmarks.md`` has the figures of the same situation on the security outbox.
"""

from __future__ import annotations

import asyncio
import time

import psycopg
import pytest

from tests.reliability.event_scenario import EventScenario
from tests.reliability.profile import PROFILE

pytestmark = pytest.mark.integration

WORKER_ENV = {"OUTBOX_EVENTS_BATCH_SIZE": "20", "OUTBOX_EVENTS_CONCURRENCY": "4"}
DEAD = (
    "SELECT COALESCE(sum(n_dead_tup), 0) FROM pg_stat_user_tables"
    " WHERE schemaname = 'events' AND relname = 'outbox_records'"
)
HOLDING = "SELECT count(*) FROM pg_stat_activity WHERE pid = %s AND backend_xmin IS NOT NULL"


async def test_a_held_horizon_loses_nothing_and_keeps_every_aggregates_order(
    event_scenario: EventScenario,
) -> None:
    world = event_scenario
    aggregates = world.producer.aggregates(4, 8)
    await world.workers.start_many(PROFILE.event_workers, **WORKER_ENV)
    holder = await psycopg.AsyncConnection.connect(world.url)
    try:
        await holder.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        await holder.execute("SELECT count(*) FROM pg_catalog.pg_class")  # the snapshot
        pid = holder.info.backend_pid
        started = time.monotonic()
        # Spread the appends over the hold: four producers, each pausing between transactions.
        pause = 4 * PROFILE.horizon_hold_seconds / PROFILE.event_appends
        producing = asyncio.create_task(
            world.producer.append(PROFILE.event_appends, aggregates, pause=pause)
        )
        peak_dead, held = 0, True
        while time.monotonic() - started < PROFILE.horizon_hold_seconds:
            peak_dead = max(peak_dead, world.scalar(DEAD))
            held = held and 1 == world.scalar(HOLDING, pid)
            await asyncio.sleep(1)
    finally:
        await holder.rollback()
        await holder.close()
    hold_seconds = time.monotonic() - started
    await producing
    await world.settle()

    verdict = await world.finish(
        "31 events: xmin horizon held under load",
        hold_seconds=round(hold_seconds, 1),
        peak_dead_records=peak_dead,
    )

    assert held, "the holder's snapshot did not keep the horizon the whole time"
    assert PROFILE.event_appends == verdict.appended == verdict.published
    assert 0 == verdict.re_offers  # no worker lost a lease to a slow claim
