"""Scenario 8: tenant events workers killed with SIGKILL, again and again, mid-publication.

Producers append events for several organizations and aggregates while several events
workers publish them — most to a recording target that answers slowly, one as the plain
``outboxctl worker --lanes events`` with no target — and one worker at a time is killed at
a random moment and replaced by one of its kind. Every appended event must be published exactly
once, in append order within its aggregate, with no attempt recorded under a stale lease,
and only events in flight at a kill may reach the target twice.
"""

from __future__ import annotations

import asyncio
import random
import signal

import pytest

from tests.reliability.event_scenario import EventScenario
from tests.reliability.profile import PROFILE

pytestmark = pytest.mark.integration

WORKER_ENV = {
    "OUTBOX_EVENTS_BATCH_SIZE": "10",
    "OUTBOX_EVENTS_CONCURRENCY": "2",
    "OUTBOX_WORKER_LEASE_SECONDS": "1.5",
}
ORGANIZATIONS = 4
AGGREGATES_PER_ORGANIZATION = 8


async def test_sigkill_mid_publication_loses_nothing_keeps_order_and_reoffers_only_in_flight(
    event_scenario: EventScenario,
) -> None:
    world = event_scenario
    world.ledger.behaviour.latency = 0.05  # offers take time, so kills find some in flight
    aggregates = world.producer.aggregates(ORGANIZATIONS, AGGREGATES_PER_ORGANIZATION)
    backlog = PROFILE.event_appends // 3
    await world.producer.append(backlog, aggregates)  # so the first kills find work
    await world.workers.start_many(PROFILE.event_workers - 1, **WORKER_ENV)
    world.start_plain(**WORKER_ENV)  # and the product's own, with no target
    producing = asyncio.create_task(
        world.producer.append(PROFILE.event_appends - backlog, aggregates, pause=0.05)
    )
    rng = random.Random()
    kills = in_flight = 0
    while kills < PROFILE.event_kills and (not producing.done() or world.unsettled() > 0):
        await asyncio.sleep(rng.uniform(0.15, 0.5))
        announced = [w for w in world.workers.alive() if w.owner() is not None]
        if not announced:
            continue
        victim = rng.choice(announced)
        victim.signal(signal.SIGKILL)
        await victim.exited()
        in_flight += world.leased_by(str(victim.owner()))
        kills += 1
        if victim.label in world.untargeted:  # its replacement, of the same kind
            world.start_plain(**WORKER_ENV)
        else:
            world.workers.start(**WORKER_ENV)
    await producing
    await world.settle()

    verdict = await world.finish(
        "8 events: SIGKILL mid-publication", kills=kills, in_flight_at_kills=in_flight
    )

    assert kills >= min(PROFILE.event_kills, 3), "the drain ended before the kills could matter"
    assert PROFILE.event_appends == verdict.appended == verdict.published
    # Only an event in flight at a kill, or one whose record came too late (its lease lost on a
    # starved machine), may be offered again.
    refused = world.workers.count_events("event.lease_lost")
    assert verdict.re_offered <= verdict.re_offers <= in_flight + refused
    assert 0 == verdict.late_offers
