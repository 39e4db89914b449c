"""No send outlives the lease that allows it (late sends, stale records)."""

from __future__ import annotations

from datetime import timedelta

import attrs

from outbox.application.delivery.batch import BatchTally
from outbox.application.delivery.ports import Delivery
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import State
from tests.unit.application.delivery.test_dispatch_due_messages import Harness, SlowClaimStore


async def test_a_worker_frozen_past_its_lease_sends_none_of_the_rest_of_its_batch() -> None:
    h = Harness(concurrency=1)
    ids = [await h.enqueue() for _ in range(3)]

    def freeze(_: Delivery) -> None:
        h.email.before_send = None
        h.clock.advance(timedelta(seconds=61))  # SIGSTOP past the 60 s lease, then SIGCONT

    h.email.before_send = freeze

    result = await h.dispatch()

    assert 1 == len(h.email.tried)  # the send it was making when it froze, nothing after
    assert BatchTally(claimed=3, lease_lost=3) == result
    skipped = h.telemetry.named("delivery.lease_running_out")
    assert [str(i) for i in ids[1:]] == [event.fields["message_id"] for event in skipped]
    assert {State.LEASED} == {h.message(i).state for i in ids}  # reclaimed once the lease ends


async def test_the_deadline_counts_from_before_the_claim() -> None:
    """A claim that returns late (a slow database) leaves less of the lease for sending."""
    h = Harness()
    h.store = SlowClaimStore(clock=h.clock, claim_takes=timedelta(seconds=55))  # past 90% of 60
    h.dispatch = attrs.evolve(h.dispatch, store=h.store)
    await h.enqueue()

    result = await h.dispatch()

    assert [] == h.email.tried
    assert BatchTally(claimed=1, lease_lost=1) == result


async def test_a_send_is_cut_off_where_the_lease_would_end() -> None:
    """A provider slower than what is left of the lease times out before the lease runs out."""
    h = Harness()
    message_id = await h.enqueue()
    h.email.delay = 5  # well within the provider timeout set below, far beyond the lease
    dispatch = attrs.evolve(
        h.dispatch, lease=timedelta(seconds=0.3), provider_timeout=timedelta(seconds=30)
    )

    result = await dispatch()

    assert BatchTally(claimed=1, retried=1) == result
    [failed] = h.telemetry.named("delivery.failed")
    assert (FailureClass.INDETERMINATE.value, "timeout") == (
        failed.fields["failure_class"],
        failed.fields["code"],
    )
    assert State.PENDING == h.message(message_id).state


async def test_sends_that_start_in_time_are_recorded_as_usual() -> None:
    h = Harness(concurrency=1)
    for _ in range(3):
        await h.enqueue()
    h.email.before_send = lambda _: h.clock.advance(timedelta(seconds=10))

    assert BatchTally(claimed=3, published=3) == await h.dispatch()
    assert [] == h.telemetry.named("delivery.lease_running_out")
