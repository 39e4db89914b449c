"""The worker loop drains, idles, stops and survives a lost database."""

from __future__ import annotations

import asyncio
from collections import deque
from datetime import timedelta

import attrs

from outbox.application.delivery.batch import BatchTally
from outbox.application.errors import StoreUnavailable
from outbox.entrypoints.worker.loop import WorkerLoop
from tests.fakes.telemetry import RecordingTelemetry


@attrs.define
class ScriptedDispatch:
    """Returns (or raises) the queued results, then empty batches."""

    script: deque[BatchTally | Exception]
    calls: int = 0

    async def __call__(self) -> BatchTally:
        self.calls += 1
        await asyncio.sleep(0)
        if not self.script:
            return BatchTally()
        step = self.script.popleft()
        if isinstance(step, Exception):
            raise step
        return step


@attrs.define
class Wakeups:
    """A wait_for_work that records its calls and returns at once."""

    waits: list[float] = attrs.field(factory=list)

    async def __call__(self, within: float) -> None:
        self.waits.append(within)
        await asyncio.sleep(0.001)


def _loop(dispatch: ScriptedDispatch, wakeups: Wakeups, *, drain: bool) -> WorkerLoop:
    return WorkerLoop(
        totals=BatchTally(),
        dispatch=dispatch,
        wait_for_work=wakeups,
        telemetry=RecordingTelemetry(),
        poll_interval=timedelta(seconds=0.25),
        drain=drain,
    )


async def test_drain_runs_batches_until_one_claims_nothing() -> None:
    dispatch = ScriptedDispatch(
        deque([BatchTally(claimed=2, published=2), BatchTally(claimed=1, retried=1)])
    )
    totals = await _loop(dispatch, Wakeups(), drain=True).run()
    assert BatchTally(claimed=3, published=2, retried=1) == totals
    assert 3 == dispatch.calls


async def test_an_idle_loop_waits_for_work_with_the_poll_interval() -> None:
    wakeups = Wakeups()
    loop = _loop(ScriptedDispatch(deque()), wakeups, drain=False)
    task = asyncio.create_task(loop.run())
    while len(wakeups.waits) < 3:
        await asyncio.sleep(0.001)
    loop.stop()
    await asyncio.wait_for(task, 1)
    assert {0.25} == set(wakeups.waits)


async def test_stop_interrupts_an_idle_wait_at_once() -> None:
    class Forever:
        async def __call__(self, within: float) -> None:
            await asyncio.sleep(3600)

    loop = WorkerLoop(
        totals=BatchTally(),
        dispatch=ScriptedDispatch(deque()),
        wait_for_work=Forever(),
        telemetry=RecordingTelemetry(),
        poll_interval=timedelta(hours=1),
    )
    task = asyncio.create_task(loop.run())
    await asyncio.sleep(0.01)
    loop.stop()
    await asyncio.wait_for(task, 1)
    assert loop.stopping


async def test_a_lost_database_is_retried_and_reported_then_recovery_is_reported() -> None:
    telemetry = RecordingTelemetry()
    dispatch = ScriptedDispatch(
        deque([StoreUnavailable("08006"), StoreUnavailable("08006"), BatchTally(claimed=1)])
    )
    loop = WorkerLoop(
        totals=BatchTally(),
        dispatch=dispatch,
        wait_for_work=Wakeups(),
        telemetry=telemetry,
        poll_interval=timedelta(seconds=0.01),
        drain=True,
    )
    totals = await asyncio.wait_for(loop.run(), 5)
    assert 1 == totals.claimed
    assert ["08006", "08006"] == [
        e.fields["code"] for e in telemetry.named("worker.database_unavailable")
    ]
    assert 1 == len(telemetry.named("worker.database_recovered"))


async def test_a_failing_wakeup_listener_does_not_stop_the_loop() -> None:
    class Broken:
        calls = 0

        async def __call__(self, within: float) -> None:
            self.calls += 1
            raise StoreUnavailable("57P01")

    broken = Broken()
    loop = WorkerLoop(
        totals=BatchTally(),
        dispatch=ScriptedDispatch(deque()),
        wait_for_work=broken,
        telemetry=RecordingTelemetry(),
        poll_interval=timedelta(seconds=0.01),
    )
    task = asyncio.create_task(loop.run())
    while broken.calls < 3:
        await asyncio.sleep(0.001)
    loop.stop()
    await asyncio.wait_for(task, 1)


async def test_cancelling_the_loop_propagates_cancellation() -> None:
    class Slow:
        async def __call__(self) -> BatchTally:
            await asyncio.sleep(3600)
            return BatchTally()

    loop = WorkerLoop(
        totals=BatchTally(),
        dispatch=Slow(),
        wait_for_work=Wakeups(),
        telemetry=RecordingTelemetry(),
        poll_interval=timedelta(seconds=1),
    )
    task = asyncio.create_task(loop.run())
    await asyncio.sleep(0.01)
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=1)
    assert {task} == done
    assert task.cancelled()
