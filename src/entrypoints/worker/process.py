"""The worker process: the loop, its sweeps, signals and the shutdown grace period (SPEC §7)."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Sequence
from datetime import timedelta

from application.outbox.dispatch_due_messages import DispatchResult
from application.ports import Telemetry
from entrypoints.worker.loop import WorkerLoop
from entrypoints.worker.schedule import Every


async def run_worker_process(
    *,
    loop: WorkerLoop,
    sweeps: Sequence[Every],
    grace: timedelta,
    telemetry: Telemetry,
    handle_signals: bool = True,
) -> DispatchResult:
    """Run until the loop ends (drain) or SIGTERM/SIGINT asks it to stop.

    On a signal the worker stops claiming and lets the batch in flight finish and be
    recorded for up to ``grace``; after that the batch is cancelled (its leases expire
    and another worker reclaims them). Returns the totals of every batch.
    """
    running = asyncio.get_running_loop()
    stop_requested = asyncio.Event()

    def request_stop(signame: str) -> None:
        if not stop_requested.is_set():
            telemetry.event("worker.stopping", signal=signame, grace_seconds=grace.total_seconds())
        stop_requested.set()
        loop.stop()

    signals = (signal.SIGTERM, signal.SIGINT) if handle_signals else ()
    for signum in signals:
        running.add_signal_handler(signum, request_stop, signum.name)
    sweep_tasks = [asyncio.create_task(sweep.run(), name=f"sweep-{sweep.name}") for sweep in sweeps]
    work = asyncio.create_task(loop.run(), name="worker-loop")
    stopper = asyncio.create_task(stop_requested.wait())
    try:
        await asyncio.wait({work, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if not work.done():
            _, pending = await asyncio.wait({work}, timeout=grace.total_seconds())
            if pending:
                telemetry.event("worker.grace_expired", level="warning")
                work.cancel()
                await asyncio.wait({work})
    finally:
        stopper.cancel()
        for task in sweep_tasks:
            task.cancel()
        await asyncio.gather(stopper, *sweep_tasks, return_exceptions=True)
        for signum in signals:
            running.remove_signal_handler(signum)
    totals = loop.totals
    if not work.cancelled() and work.exception() is not None:
        raise work.exception()  # type: ignore[misc]
    telemetry.event(
        "worker.stopped",
        claimed=totals.claimed,
        published=totals.published,
        retried=totals.retried,
        released=totals.released,
        dead_lettered=totals.dead_lettered,
        lease_lost=totals.lease_lost,
        unrecorded=totals.unrecorded,
    )
    return totals
