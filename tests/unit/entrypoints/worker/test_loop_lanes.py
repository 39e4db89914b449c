"""Several lanes of one worker loop: concurrent batches, summed totals, one shared idle wait."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import attrs
import pytest

from outbox.application.delivery.batch import BatchTally
from outbox.entrypoints.worker.loop import HINT_GRACE, WorkerLoop
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


@attrs.define
class Notifications:
    """A wait_for_work that returns when the test notifies (or after ``within``)."""

    queue: asyncio.Queue[None] = attrs.field(factory=asyncio.Queue)

    def notify(self) -> None:
        self.queue.put_nowait(None)

    async def __call__(self, within: float) -> None:
        try:
            async with asyncio.timeout(within):
                await self.queue.get()
        except TimeoutError:
            return


@attrs.define
class DueWork:
    """Claims what the test put in ``due`` (at most ``limit`` a batch); counts its claims."""

    limit: int
    due: int = 0
    claims: int = 0
    work: float = 0.0  # seconds each non-empty batch takes to send
    sending: int = 0
    peak: int = 0  # the most batches sending at once

    async def __call__(self) -> BatchTally:
        self.claims += 1
        taken = min(self.due, self.limit)
        self.due -= taken
        if taken:
            self.sending += 1
            self.peak = max(self.peak, self.sending)
            await asyncio.sleep(self.work)
            self.sending -= 1
        return BatchTally(claimed=taken, published=taken)


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)
    await asyncio.sleep(HINT_GRACE * 2)


async def _idle_batches(
    dispatch: DueWork, *, batch_size: int | None = None
) -> tuple[WorkerLoop, asyncio.Future[BatchTally], Notifications]:
    """Four batches of a running loop, each idle after a first claim that found nothing;
    a batch is full at ``batch_size`` (the dispatch's limit when not given)."""
    notifications = Notifications()
    loop = WorkerLoop(
        totals=BatchTally(),
        dispatch=dispatch,
        wait_for_work=notifications,
        telemetry=RecordingTelemetry(),
        poll_interval=timedelta(seconds=30),
        parallel_batches=4,
        batch_size=batch_size or dispatch.limit,
    )
    running = asyncio.ensure_future(loop.run())
    await _settle()
    return loop, running, notifications


async def test_a_notification_starts_one_claim_not_one_per_idle_batch() -> None:
    dispatch = DueWork(limit=10)
    loop, running, notifications = await _idle_batches(dispatch)
    assert 4 == dispatch.claims  # each batch's first claim found nothing
    for _ in range(3):
        dispatch.due += 1
        notifications.notify()
        await _settle()
    loop.stop()
    assert 3 == (await asyncio.wait_for(running, 1)).published
    # Per event: the claim that took it and the one after it that found nothing.
    assert 4 + 3 * 2 == dispatch.claims


async def test_a_full_batch_wakes_another_idle_batch() -> None:
    dispatch = DueWork(limit=10, work=0.05)
    loop, running, notifications = await _idle_batches(dispatch)
    dispatch.due = 40
    notifications.notify()
    await _settle()
    loop.stop()
    assert 40 == (await asyncio.wait_for(running, 1)).published
    # One batch woke; it came back full and woke another, and so on while batches were full.
    assert 2 <= dispatch.peak


async def test_without_a_full_size_any_batch_that_claimed_wakes_another() -> None:
    """The events lane's: its record promotes the next heads, so there may be more."""
    dispatch = DueWork(limit=10, work=0.05)
    loop, running, notifications = await _idle_batches(dispatch, batch_size=1)
    dispatch.due = 3
    notifications.notify()
    await _settle()
    loop.stop()
    assert 3 == (await asyncio.wait_for(running, 1)).published
    # The woken batch took all three, woke another (whose claim found nothing), and claimed
    # once more itself (nothing): with a full size of ten, the middle claim is not made.
    assert 4 + 3 == dispatch.claims


async def test_a_notification_during_a_batch_goes_to_its_next_claim() -> None:
    dispatch = DueWork(limit=10, work=HINT_GRACE / 4)
    loop, running, notifications = await _idle_batches(dispatch)
    dispatch.due = 1
    notifications.notify()
    await asyncio.sleep(HINT_GRACE / 8)  # the woken batch is sending its one message
    dispatch.due += 1
    notifications.notify()
    await _settle()
    loop.stop()
    assert 2 == (await asyncio.wait_for(running, 1)).published
    # No idle batch was woken for the second: the running one's next claim took it.
    assert 4 + 3 == dispatch.claims


async def test_a_notification_behind_a_slow_batch_wakes_an_idle_one() -> None:
    dispatch = DueWork(limit=10, work=HINT_GRACE * 5)
    loop, running, notifications = await _idle_batches(dispatch)
    dispatch.due = 1
    notifications.notify()
    await asyncio.sleep(HINT_GRACE / 2)  # the woken batch sends for a long while
    dispatch.due += 1
    notifications.notify()
    await asyncio.sleep(HINT_GRACE * 2)
    taken_meanwhile = 2 - dispatch.due
    loop.stop()
    assert 2 == (await asyncio.wait_for(running, 2)).published
    assert 2 == taken_meanwhile  # an idle batch took the second before the slow one ended
