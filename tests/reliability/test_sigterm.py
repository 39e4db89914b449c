"""Scenario 3: SIGTERM while sends are slow.

A stopping worker claims nothing more, lets the sends in flight finish within its grace
period, records them and exits 0. Nothing it held is reclaimed by anyone while it drains,
and it leaves no lease behind.
"""

from __future__ import annotations

import signal
import time

import pytest

from tests.reliability.lease_audit import transitions
from tests.reliability.producer import EMAIL_CODE
from tests.reliability.profile import PROFILE
from tests.reliability.scenario import Scenario

pytestmark = pytest.mark.integration

ARGS = ("--batch-size", "10", "--concurrency", "10")
SLOW = {  # sends take most of a second; the lease comfortably outlasts a batch of them
    "OUTBOX_PROVIDER_TIMEOUT_SECONDS": "5",
    "OUTBOX_WORKER_LEASE_SECONDS": "8",
    "OUTBOX_WORKER_SHUTDOWN_GRACE_SECONDS": "10",
}
LEASED = "SELECT id, lease_owner FROM outbox.messages WHERE state = 'leased'"


async def test_sigterm_finishes_the_sends_in_flight_and_leaves_no_lease(
    scenario: Scenario,
) -> None:
    scenario.ledger.behaviour.latency = 0.6
    held_at_stop = reclaimed = claims_after_stop = 0
    for _ in range(PROFILE.term_rounds):
        workers = await scenario.workers.start_many(2, *ARGS, **SLOW)
        owners = {str(w.owner()) for w in workers}
        await scenario.producer.enqueue(50, kinds=[EMAIL_CODE])  # 40 in flight, 10 left
        await scenario.until(
            lambda owners=owners: all(scenario.leased_by(o) for o in owners), what="sends"
        )
        stopped_at = time.time()
        for worker in workers:
            worker.signal(signal.SIGTERM)
        held = {row[0]: row[1] for row in scenario.rows(LEASED)}
        codes = [await worker.exited(within=20) for worker in workers]

        assert [0, 0] == codes, [w.tail() for w in workers]
        assert 0 == scenario.scalar("SELECT count(*) FROM outbox.messages WHERE state = 'leased'")
        changes = transitions(scenario.url)
        # Every message a stopping worker held was recorded by that worker, never reclaimed.
        for change in changes:
            if change.message_id in held and change.grants_lease and change.at > stopped_at:
                reclaimed += 1
            if change.grants_lease and change.at > stopped_at + 0.5 and change.new_owner in owners:
                claims_after_stop += 1
        final = {
            change.message_id
            for change in changes
            if change.caller == "record" and change.old_owner == held.get(change.message_id)
        }
        held_at_stop += len(held)
        assert set(held) <= final
    # What was never claimed is delivered by a worker that is left running.
    await scenario.workers.start_ready(*ARGS, **SLOW)
    await scenario.settle()

    verdict = await scenario.finish(
        "3 SIGTERM during slow sends",
        rounds=PROFILE.term_rounds,
        held_at_stop=held_at_stop,
        reclaimed_while_draining=reclaimed,
        claims_after_stop=claims_after_stop,
    )

    assert 0 == reclaimed
    assert 0 == claims_after_stop
    assert 0 == verdict.duplicated
    assert held_at_stop > 0
