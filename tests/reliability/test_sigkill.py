"""Scenario 1: workers killed with SIGKILL, again and again, in the middle of a drain.

Several workers drain thousands of messages in small batches while one of them is killed
at a random moment and replaced. Nothing may be lost, no result may be recorded under a
stale lease, and only messages in flight at a kill may reach the provider twice.
"""

from __future__ import annotations

import asyncio
import random
import signal

import pytest

from tests.reliability.profile import PROFILE
from tests.reliability.scenario import Scenario

pytestmark = pytest.mark.integration

WORKER_ARGS = ("--batch-size", "10", "--concurrency", "5")
LEASE = {"OUTBOX_WORKER_LEASE_SECONDS": "1.5"}


async def test_sigkill_mid_drain_loses_nothing_and_duplicates_only_what_was_in_flight(
    scenario: Scenario,
) -> None:
    scenario.ledger.behaviour.latency = 0.08  # sends take time, so kills find some in flight
    await scenario.producer.enqueue(PROFILE.kill_messages)
    await scenario.workers.start_many(PROFILE.kill_workers, *WORKER_ARGS, **LEASE)
    rng = random.Random()
    kills = in_flight = 0
    while kills < PROFILE.kills and scenario.live() > 0:
        await asyncio.sleep(rng.uniform(0.15, 0.5))
        announced = [w for w in scenario.workers.alive() if w.owner() is not None]
        if not announced:
            continue
        victim = rng.choice(announced)
        victim.signal(signal.SIGKILL)
        await victim.exited()
        in_flight += scenario.leased_by(str(victim.owner()))
        kills += 1
        scenario.workers.start(*WORKER_ARGS, **LEASE)  # its replacement
    await scenario.settle()

    verdict = await scenario.finish(
        "1 SIGKILL mid-drain", kills=kills, in_flight_at_kills=in_flight
    )

    assert kills >= min(PROFILE.kills, 3), "the drain ended before the kills could matter"
    assert PROFILE.kill_messages == verdict.delivered + verdict.duplicated
    assert verdict.duplicated <= in_flight
    # Brevo's idempotency key absorbs resent email; WhatsApp has none, so a resend is a second
    # message, and only a message in flight at a kill can be resent.
    assert verdict.double_deliveries <= verdict.duplicated
    assert 0 == verdict.late_sends
