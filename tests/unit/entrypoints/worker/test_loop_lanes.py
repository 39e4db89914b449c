"""Several lanes of one worker loop: concurrent batches, summed totals, one shared idle wait."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta

import attrs
import pytest

from outbox.application.delivery.batch import BatchTally
from outbox.entrypoints.worker.loop import WorkerLoop
from tests.fakes.telemetry import RecordingTelemetry


@attrs.define
class CountingDispatch:
    """Hands out ``batches`` one-message batches, each taking a little while; keeps the peak."""

    batches: int
    running: int = 0
    peak: int = 0

    async def __call__(self) -> BatchTally:
        if self.batches == 0:
            return BatchTally()
        self.batches -= 1
        self.running += 1
        self.peak = max(self.peak, self.running)
        await asyncio.sleep(0.005)
        self.running -= 1
        return BatchTally(claimed=1, published=1)


@attrs.define
class SharedWakeups:
    """A wait_for_work that keeps how many calls overlapped."""

    calls: int = 0
    running: int = 0
    peak: int = 0

    async def __call__(self, within: float) -> None:
        self.calls += 1
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            await asyncio.sleep(0.01)
        finally:
            self.running -= 1


def _loop(
    dispatch: CountingDispatch, wakeups: SharedWakeups, *, lanes: int, drain: bool
) -> WorkerLoop:
    return WorkerLoop(
        totals=BatchTally(),
        dispatch=dispatch,
        wait_for_work=wakeups,
        telemetry=RecordingTelemetry(),
        poll_interval=timedelta(seconds=0.05),
        drain=drain,
        parallel_batches=lanes,
    )


async def test_two_lanes_dispatch_two_batches_at_once_and_sum_their_totals() -> None:
    dispatch = CountingDispatch(batches=10)
    totals = await _loop(dispatch, SharedWakeups(), lanes=2, drain=True).run()
    assert BatchTally(claimed=10, published=10) == totals
    assert 2 == dispatch.peak


async def test_one_lane_never_overlaps_batches() -> None:
    dispatch = CountingDispatch(batches=4)
    totals = await _loop(dispatch, SharedWakeups(), lanes=1, drain=True).run()
    assert 4 == totals.published
    assert 1 == dispatch.peak


async def test_idle_lanes_share_one_wait_for_work_and_stop_together() -> None:
    wakeups = SharedWakeups()
    loop = _loop(CountingDispatch(batches=0), wakeups, lanes=3, drain=False)
    running = asyncio.ensure_future(loop.run())
    while wakeups.calls < 3:
        await asyncio.sleep(0.005)
    loop.stop()
    assert BatchTally() == await asyncio.wait_for(running, 1)
    assert 1 == wakeups.peak


async def test_cancelling_a_multi_lane_loop_cancels_its_lanes_and_wait() -> None:
    loop = _loop(CountingDispatch(batches=0), SharedWakeups(), lanes=2, drain=False)
    running = asyncio.ensure_future(loop.run())
    await asyncio.sleep(0.02)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert loop._idling is not None
    assert loop._idling.done()


def test_a_loop_needs_at_least_one_lane() -> None:
    with pytest.raises(ValueError, match="parallel_batches"):
        _loop(CountingDispatch(batches=0), SharedWakeups(), lanes=0, drain=True)


async def _never_woken(within: float) -> None:
    await asyncio.sleep(within)  # no NOTIFY ever comes: only the poll ends the wait


@attrs.define
class Burst:
    """``waiting`` codes; the reserved slot takes ``size`` a claim and wakes on ``notify``,
    the batches take up to ten a claim; what each took is kept."""

    size: int
    waiting: int = 0
    notify: asyncio.Event = attrs.field(factory=asyncio.Event)
    by_slot: int = 0
    by_batches: int = 0

    async def slot(self) -> BatchTally:
        await asyncio.sleep(0.001)
        taken = min(self.size, self.waiting)
        self.waiting -= taken
        self.by_slot += taken
        return BatchTally(claimed=taken, published=taken)

    async def batch(self) -> BatchTally:
        await asyncio.sleep(0.001)
        taken = min(10, self.waiting)
        self.waiting -= taken
        self.by_batches += taken
        return BatchTally(claimed=taken, published=taken)

    async def slot_wake_up(self, within: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.notify.wait(), within)
        self.notify.clear()


@pytest.mark.parametrize("reserved_batch", [3, None])
async def test_a_full_reserved_claim_wakes_the_idle_batches_to_take_the_rest(
    reserved_batch: int | None,
) -> None:
    """A code wakes the reserved slot alone (0065). A slot claim that fills its batch says
    more are waiting, and the batches, idle until their poll otherwise, wake to help."""
    burst = Burst(size=3)
    loop = WorkerLoop(
        totals=BatchTally(),
        dispatch=burst.batch,
        wait_for_work=_never_woken,
        telemetry=RecordingTelemetry(),
        poll_interval=timedelta(seconds=5),
        parallel_batches=2,
        reserved=burst.slot,
        wait_for_reserved=burst.slot_wake_up,
        reserved_batch=reserved_batch,
    )
    running = asyncio.create_task(loop.run())
    await asyncio.sleep(0.05)  # every runner found nothing and waits

    burst.waiting = 300
    burst.notify.set()
    async with asyncio.timeout(4):  # well inside the batches' poll
        while burst.waiting:
            await asyncio.sleep(0.001)
    loop.stop()
    await asyncio.wait_for(running, 6)

    assert 300 == burst.by_slot + burst.by_batches
    if reserved_batch is None:
        assert 0 == burst.by_batches  # asleep until their poll: the slot took all, 3 a claim
    else:
        assert burst.by_batches > burst.by_slot  # ten a claim, two at once
