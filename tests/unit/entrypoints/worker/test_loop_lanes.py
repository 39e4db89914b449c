"""Several lanes of one worker loop: concurrent batches, summed totals, one shared idle wait."""

from __future__ import annotations

import asyncio
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
