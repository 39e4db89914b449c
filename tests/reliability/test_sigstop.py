"""Scenario 2: a worker frozen (SIGSTOP) past its lease, reclaimed by another, then resumed.

The frozen worker holds a batch of slow sends. While it is stopped its lease runs out and
the other worker takes its messages; when it wakes up (SIGCONT) its record must be refused
as lease lost, and it may not go on sending the rest of the batch it no longer holds: at
most one late send per pause (the one it may have been writing when it froze).
"""

from __future__ import annotations

import signal

import pytest

from tests.reliability.producer import EMAIL_CODE
from tests.reliability.profile import PROFILE
from tests.reliability.scenario import Scenario
from tests.reliability.workers import Worker

pytestmark = pytest.mark.integration

LEASE = "3"
ARGS = ("--batch-size", "4", "--concurrency", "1")
LATE = ("outcome.lease_lost", "delivery.lease_running_out")


def _late(worker: Worker) -> int:
    """Records refused as lease lost, and sends not started because the lease ran out."""
    return sum(len(worker.events(name)) for name in LATE)


async def test_a_worker_resumed_after_its_lease_sends_nothing_more_and_its_record_is_refused(
    scenario: Scenario,
) -> None:
    scenario.ledger.behaviour.latency = 0.25
    [frozen, _] = await scenario.workers.start_many(2, *ARGS, OUTBOX_WORKER_LEASE_SECONDS=LEASE)
    owner = str(frozen.owner())
    pauses = 0
    for _ in range(PROFILE.pauses):
        # Enough for every lane of both workers, so the one to freeze has a batch in hand.
        await scenario.producer.enqueue(PROFILE.pause_messages, kinds=[EMAIL_CODE])
        await scenario.until(lambda: scenario.leased_by(owner) >= 2, what="a batch in hand")
        frozen.signal(signal.SIGSTOP)
        pauses += 1
        # The lease runs out and the other worker takes (or has finished) those messages.
        await scenario.until(lambda: scenario.leased_by(owner) == 0, what="a reclaim")
        before = _late(frozen)
        frozen.signal(signal.SIGCONT)
        await scenario.until(
            lambda before=before: _late(frozen) > before, what="the late worker noticing"
        )
    await scenario.settle()

    refused = len(frozen.events("outcome.lease_lost"))
    unsent = len(frozen.events("delivery.lease_running_out"))
    verdict = await scenario.finish(
        "2 SIGSTOP past the lease", pauses=pauses, refused_records=refused, unsent=unsent
    )

    assert PROFILE.pauses == pauses
    assert verdict.late_sends <= pauses
