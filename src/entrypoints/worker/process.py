"""The worker process: its lanes' loops, sweeps, signals and the shutdown grace."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import timedelta
from typing import Any

import attrs

from outbox.application.ports import Telemetry
from outbox.entrypoints.worker.loop import BatchResult, WorkerLoop
from outbox.entrypoints.worker.schedule import Every

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextlib.asynccontextmanager
async def stop_signals(telemetry: Telemetry, *, grace: timedelta) -> AsyncIterator[asyncio.Event]:
    """From now on SIGTERM and SIGINT set the event yielded (the first one is logged).

    Entered before the process says it is up (its health listener answers, its addresses are
    announced), so a signal that comes before the lanes start still ends it cleanly: the
    lanes see the event set and stop before their first claim.
    """
    running = asyncio.get_running_loop()
    stop = asyncio.Event()

    def request_stop(signame: str) -> None:
        if not stop.is_set():
            telemetry.event("worker.stopping", signal=signame, grace_seconds=grace.total_seconds())
        stop.set()

    for signum in STOP_SIGNALS:
        running.add_signal_handler(signum, request_stop, signum.name)
    try:
        yield stop
    finally:
        for signum in STOP_SIGNALS:
            running.remove_signal_handler(signum)


async def run_worker_process(
    *,
    lanes: Mapping[str, WorkerLoop[Any]],
    sweeps: Sequence[Every],
    grace: timedelta,
    telemetry: Telemetry,
    stop: asyncio.Event | None = None,
) -> dict[str, BatchResult]:
    """Run every lane's loop until each ends (drain) or ``stop`` is set.

    ``stop`` is the event ``stop_signals`` sets on SIGTERM or SIGINT (none: the lanes run
    until they end). The lanes run side by side, each on its own loop (one lane's backlog
    never waits for another's). Once ``stop`` is set every lane stops claiming and lets its
    batches in flight finish and be recorded for up to ``grace``; after that they are
    cancelled (their leases expire and another worker reclaims them). A lane that fails (a
    drain that cannot reach the database) stops the others, and its error is raised.
    Returns each lane's totals.
    """
    stop_requested = stop or asyncio.Event()

    def stop_all() -> None:
        for loop in lanes.values():
            loop.stop()

    if stop_requested.is_set():
        stop_all()  # asked before the lanes started: none claims at all
    sweep_tasks = [asyncio.create_task(sweep.run(), name=f"sweep-{sweep.name}") for sweep in sweeps]
    work = {
        asyncio.create_task(loop.run(), name=f"worker-loop-{name}"): name
        for name, loop in lanes.items()
    }
    stopper = asyncio.create_task(stop_requested.wait())
    try:
        if await _until_done_or_stopped(set(work), stopper):
            stop_all()
        pending = {task for task in work if not task.done()}
        if pending:
            _, pending = await asyncio.wait(pending, timeout=grace.total_seconds())
            if pending:
                telemetry.event("worker.grace_expired", level="warning")
                for task in pending:
                    task.cancel()
                await asyncio.wait(pending)
    finally:
        stopper.cancel()
        for task in sweep_tasks:
            task.cancel()
        await asyncio.gather(stopper, *sweep_tasks, return_exceptions=True)
    for task in work:
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
    totals: dict[str, BatchResult] = {name: lanes[name].totals for name in lanes}
    for name, lane_totals in totals.items():
        telemetry.event("worker.stopped", lane=name, **attrs.asdict(lane_totals))
    return totals


async def _until_done_or_stopped(work: set[asyncio.Task[Any]], stopper: asyncio.Task[Any]) -> bool:
    """Wait until every lane ended, a stop was asked or a lane failed; whether the others
    must be stopped (a stop was asked, or a lane failed)."""
    waiting = set(work)
    while waiting:
        done, _ = await asyncio.wait({*waiting, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if stopper in done:
            return True
        waiting -= done
        if any(not task.cancelled() and task.exception() is not None for task in done):
            return True
    return False
