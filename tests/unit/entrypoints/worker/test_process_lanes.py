"""One worker process, several lanes: side by side, stopped together, per-lane totals."""

from __future__ import annotations

import asyncio
import os
import signal
from datetime import timedelta

import attrs
import pytest

from outbox.application.delivery.batch import BatchTally
from outbox.application.errors import StoreNotMigrated
from outbox.entrypoints.worker.loop import WorkerLoop
from outbox.entrypoints.worker.process import run_worker_process, stop_signals
from tests.fakes.telemetry import RecordingTelemetry


@attrs.frozen(kw_only=True)
class Tally:
    """A second lane's batch result: a shape of its own, as the events lane has."""

    claimed: int = 0
    published: int = 0


@attrs.define
class Batches:
    """``batches`` batches of one row each, then nothing due; or ``error`` at once."""

    batches: int
    error: Exception | None = None
    calls: int = 0

    async def dispatch(self) -> BatchTally:
        return BatchTally(**attrs.asdict(await self.tally()))

    async def tally(self) -> Tally:
        self.calls += 1
        await asyncio.sleep(0.001)
        if self.error is not None:
            raise self.error
        if self.calls > self.batches:
            return Tally()
        return Tally(claimed=1, published=1)


async def _never(within: float) -> None:
    await asyncio.sleep(within)


def _loops(
    security: Batches, events: Batches, *, drain: bool
) -> dict[str, WorkerLoop[BatchTally] | WorkerLoop[Tally]]:
    telemetry = RecordingTelemetry()
    common = {"wait_for_work": _never, "telemetry": telemetry, "drain": drain}
    return {
        "security": WorkerLoop(
            dispatch=security.dispatch,
            totals=BatchTally(),
            poll_interval=timedelta(seconds=0.01),
            **common,
        ),
        "events": WorkerLoop(
            dispatch=events.tally, totals=Tally(), poll_interval=timedelta(seconds=0.01), **common
        ),
    }


async def test_a_drain_drains_every_lane_and_returns_each_ones_totals() -> None:
    telemetry = RecordingTelemetry()
    totals = await run_worker_process(
        lanes=_loops(Batches(3), Batches(5), drain=True),
        sweeps=[],
        grace=timedelta(seconds=1),
        telemetry=telemetry,
    )

    assert {
        "security": BatchTally(claimed=3, published=3),
        "events": Tally(claimed=5, published=5),
    } == totals
    assert ["security", "events"] == [e.fields["lane"] for e in telemetry.named("worker.stopped")]


async def test_a_busy_lane_does_not_wait_for_an_idle_one() -> None:
    """The events lane drains its backlog while the security lane has nothing due."""
    security, events = Batches(0), Batches(20)
    loops = _loops(security, events, drain=False)
    running = asyncio.ensure_future(
        run_worker_process(
            lanes=loops,
            sweeps=[],
            grace=timedelta(seconds=1),
            telemetry=RecordingTelemetry(),
        )
    )
    while events.calls <= 20:
        await asyncio.sleep(0.005)
    for loop in loops.values():
        loop.stop()
    totals = await asyncio.wait_for(running, 2)

    assert Tally(claimed=20, published=20) == totals["events"]
    assert 0 == totals["security"].claimed


async def test_a_lane_that_fails_stops_the_others_and_its_error_is_raised() -> None:
    failing = Batches(0, error=StoreNotMigrated("42883"))
    loops = _loops(Batches(10**6), failing, drain=True)

    with pytest.raises(StoreNotMigrated):
        await asyncio.wait_for(
            run_worker_process(
                lanes=loops,
                sweeps=[],
                grace=timedelta(seconds=1),
                telemetry=RecordingTelemetry(),
            ),
            5,
        )
    assert loops["security"].stopping


async def test_a_sigterm_before_the_lanes_start_stops_them_before_their_first_claim() -> None:
    """The process says it is up (/healthz, its addresses) before its lanes start: a SIGTERM
    in between is caught and ends it cleanly, where it once killed it (exit -15)."""
    security, events = Batches(10), Batches(10)
    telemetry = RecordingTelemetry()
    async with stop_signals(telemetry, grace=timedelta(seconds=1)) as stop:
        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.wait_for(stop.wait(), 5)
        totals = await asyncio.wait_for(
            run_worker_process(
                lanes=_loops(security, events, drain=False),
                sweeps=[],
                grace=timedelta(seconds=1),
                telemetry=telemetry,
                stop=stop,
            ),
            5,
        )

    assert (0, 0) == (security.calls, events.calls)
    assert (0, 0) == (totals["security"].claimed, totals["events"].claimed)
    assert ["SIGTERM"] == [e.fields["signal"] for e in telemetry.named("worker.stopping")]
