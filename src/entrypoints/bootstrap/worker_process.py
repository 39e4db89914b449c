"""``outboxctl worker`` and ``outboxctl sweep``: the selected lanes, their sweeps, the listener."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence

import attrs
from prometheus_client import CollectorRegistry

from outbox.application.events.consumer_handlers import ConsumerRegistry
from outbox.application.events.ports import PublicationTarget
from outbox.entrypoints.bootstrap.consumers import consumer_lag_gauges
from outbox.entrypoints.bootstrap.lanes import Lane, LaneRequest, open_lanes
from outbox.entrypoints.bootstrap.parts import build_process_parts, stop_tracing
from outbox.entrypoints.bootstrap.worker import worker_owner
from outbox.entrypoints.observability import MetricsServer, serve_metrics
from outbox.entrypoints.settings.lanes import LANES, SECURITY
from outbox.entrypoints.settings.tree import Settings
from outbox.entrypoints.worker.health import WorkerReadiness
from outbox.entrypoints.worker.loop import BatchResult
from outbox.entrypoints.worker.process import run_worker_process, stop_signals


async def run_worker(
    settings: Settings,
    *,
    drain: bool = False,
    batch_size: int | None = None,
    concurrency: int | None = None,
    targets: Sequence[PublicationTarget] = (),
    consumers: ConsumerRegistry | None = None,
) -> dict[str, BatchResult]:
    """``outboxctl worker``: run the selected lanes until stopped (or drained); their totals.

    ``batch_size`` and ``concurrency`` replace the security lane's configured ones.
    ``targets`` are the events lane's publication targets (``outboxctl`` passes none);
    ``consumers`` the consumers lane's handlers (default: the shipped ones). Serves
    /metrics, /healthz and /readyz when OUTBOX_WORKER_METRICS_PORT is set.
    """
    worker = settings.worker
    sizing = attrs.evolve(
        worker.security,
        batch_size=batch_size or worker.security.batch_size,
        concurrency=concurrency or worker.security.concurrency,
    )
    settings = attrs.evolve(settings, worker=worker.resized(SECURITY, sizing))
    # Only the security lane opens sealed secrets: a worker of tenant events alone needs no key.
    parts = build_process_parts(settings, seal_keys=SECURITY in settings.worker.lanes)
    request = LaneRequest(
        settings=settings,
        parts=parts,
        owner=worker_owner(),
        drain=drain,
        targets=targets,
        consumers=consumers,
    )
    async with (
        stop_tracing(parts),
        # Caught before the listener answers: a SIGTERM right after /healthz ends it cleanly.
        stop_signals(parts.telemetry, grace=settings.worker.shutdown_grace) as stop,
        open_lanes(request, settings.worker.lanes) as lanes,
        contextlib.AsyncExitStack() as gauges,
    ):
        if settings.worker.metrics_port:
            await gauges.enter_async_context(consumer_lag_gauges(settings, parts.telemetry))
        metrics = (
            _serve_listener(
                lanes, parts.registry, settings.worker.metrics_host, settings.worker.metrics_port
            )
            if settings.worker.metrics_port
            else None
        )
        try:
            for lane in lanes:
                await lane.start_listening()  # LISTEN before the first claim: no lost hint
            parts.telemetry.event(
                "worker.started",
                owner=request.owner,
                lanes=",".join(lane.name for lane in lanes),
                drain=drain,
                metrics_port=metrics.port if metrics else None,
            )
            for lane in lanes:
                parts.telemetry.event(
                    "worker.lane_started",
                    lane=lane.name,
                    batch_size=lane.sizing.batch_size,
                    concurrency=lane.sizing.concurrency,
                    parallel_batches=lane.sizing.parallel_batches,
                )
            return await run_worker_process(
                lanes={lane.name: lane.loop for lane in lanes},
                sweeps=[] if drain else [every for lane in lanes for every in lane.sweeps],
                grace=settings.worker.shutdown_grace,
                telemetry=parts.telemetry,
                stop=stop,
            )
        finally:
            if metrics is not None:
                metrics.close()


def _serve_listener(
    lanes: Sequence[Lane], registry: CollectorRegistry, host: str, port: int
) -> MetricsServer:
    """The worker's listener: /metrics, /healthz and /readyz (checked on the worker's loop)."""
    first = lanes[0]
    readiness = WorkerReadiness(
        probe=first.probe,  # every lane's pool reaches the same database as the same role
        listening={lane.name: lane.listening for lane in lanes},
        providers=lambda: frozenset().union(*(lane.providers() for lane in lanes)),
        suspended=lambda: frozenset().union(*(lane.suspended() for lane in lanes)),
        loop=asyncio.get_running_loop(),
    )
    return serve_metrics(
        registry,
        host=host,
        port=port,
        probes={"/healthz": readiness.healthz, "/readyz": readiness.readyz},
    )


async def run_sweeps(settings: Settings, *, which: str, loop: bool) -> dict[str, int]:
    """``outboxctl sweep``: run the expiry and/or retention sweeps once, or forever with ``loop``.

    Retention covers every lane's outbox (``retention`` for messages, ``events_retention``
    for tenant events); expiry is the security outbox's alone.
    """
    parts = build_process_parts(settings)
    request = LaneRequest(settings=settings, parts=parts, owner=worker_owner(), providers={})
    async with stop_tracing(parts), contextlib.AsyncExitStack() as stack:
        lanes = await stack.enter_async_context(open_lanes(request, tuple(LANES)))
        jobs: dict[str, Callable[[], Awaitable[int]]] = {
            every.name: every.job for lane in lanes for every in lane.sweeps
        }
        chosen = {name: job for name, job in jobs.items() if _covers(which, name)}
        if loop:
            schedule = [every for lane in lanes for every in lane.sweeps if every.name in chosen]
            await asyncio.gather(*(every.run() for every in schedule))
        return {name: await job() for name, job in chosen.items()}


def _covers(which: str, sweep: str) -> bool:
    """Whether ``outboxctl sweep WHICH`` runs ``sweep`` (``events_retention`` is a retention)."""
    return which in ("all", sweep) or sweep.endswith(f"_{which}")
