"""The worker process: its lanes' loops, sweeps, signals and the shutdown grace."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any

import attrs

from outbox.application.ports import Telemetry
from outbox.entrypoints.worker.loop import BatchResult, WorkerLoop
from outbox.entrypoints.worker.schedule import Every


async def run_worker_process(
    *,
    lanes: Mapping[str, WorkerLoop[Any]],
    sweeps: Sequence[Every],
    grace: timedelta,
    telemetry: Telemetry,
    handle_signals: bool = True,
) -> dict[str, BatchResult]:
    """Run every lane's loop until each ends (drain) or SIGTERM/SIGINT asks them to stop.

    The lanes run side by side, each on its own loop (one lane's backlog never waits for
    another's). On a signal every lane stops claiming and lets its batches in flight finish
    and be recorded for up to ``grace``; after that they are cancelled (their leases expire
    and another worker reclaims them). A lane that fails (a drain that cannot reach the
    database) stops the others, and its error is raised. Returns each lane's totals.
    """
    running = asyncio.get_running_loop()
    stop_requested = asyncio.Event()

    def stop_all() -> None:
        for loop in lanes.values():
            loop.stop()

    def request_stop(signame: str) -> None:
        if not stop_requested.is_set():
            telemetry.event("worker.stopping", signal=signame, grace_seconds=grace.total_seconds())
        stop_requested.set()
        stop_all()

    signals = (signal.SIGTERM, signal.SIGINT) if handle_signals else ()
    for signum in signals:
        running.add_signal_handler(signum, request_stop, signum.name)
    sweep_tasks = [asyncio.create_task(sweep.run(), name=f"sweep-{sweep.name}") for sweep in sweeps]
    work = {
        asyncio.create_task(loop.run(), name=f"worker-loop-{name}"): name
        for name, loop in lanes.items()
    }
    stopper = asyncio.create_task(stop_requested.wait())
    try:
        await _until_done_or_stopped(set(work), stopper, stop_all)
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
        for signum in signals:
            running.remove_signal_handler(signum)
    for task in work:
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
    totals: dict[str, BatchResult] = {name: lanes[name].totals for name in lanes}
    for name, lane_totals in totals.items():
        telemetry.event("worker.stopped", lane=name, **attrs.asdict(lane_totals))
    return totals


async def _until_done_or_stopped(
    work: set[asyncio.Task[Any]], stopper: asyncio.Task[Any], stop_all: Callable[[], None]
) -> None:
    """Wait until every lane ended or a stop was asked; a lane that fails stops the others."""
    waiting = set(work)
    while waiting:
        done, _ = await asyncio.wait({*waiting, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if stopper in done:
            return
        waiting -= done
        if any(not task.cancelled() and task.exception() is not None for task in done):
            stop_all()
            return
