"""The HTTP processes: ``outboxctl serve`` (the API) and ``outboxctl up`` (everything at once)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from adapters.postgres.migrations import apply_migrations
from application.outbox.dispatch_due_messages import DispatchResult
from entrypoints.bootstrap.api import api_services
from entrypoints.bootstrap.database import resolve_database_url
from entrypoints.bootstrap.operator import staff_api_services
from entrypoints.bootstrap.worker import sweep_schedule, worker_services
from entrypoints.http.app import create_app
from entrypoints.http.server import bind, serve
from entrypoints.observability import build_telemetry, new_registry
from entrypoints.settings import Settings
from entrypoints.worker.loop import WorkerLoop
from entrypoints.worker.process import run_worker_process

# --- outboxctl up: the all-in-one development stack -----------------------------------------


async def run_stack(settings: Settings, *, announce: Callable[[str], None]) -> DispatchResult:
    """``outboxctl up``: migrate, then the API, the worker and its sweeps in one process.

    With no OUTBOX_DATABASE_URL the embedded PostgreSQL in the data directory is used.
    ``announce`` is told where the API listens once it accepts connections. SIGINT or
    SIGTERM stops the worker (with its grace period), then the API.
    """
    url = await asyncio.to_thread(resolve_database_url, settings)
    await apply_migrations(url)
    listener = bind(settings.http.host, settings.http.port)
    registry = new_registry()
    telemetry = build_telemetry(registry)
    async with (
        api_services(settings, registry=registry, telemetry=telemetry) as services,
        staff_api_services(settings, telemetry=telemetry) as operator,
        worker_services(settings, registry=registry, telemetry=telemetry) as worker,
    ):
        app = create_app(services, registry=registry, operator=operator)
        stop = asyncio.Event()
        host, port = listener.getsockname()[:2]
        api = asyncio.create_task(
            serve(app, host=host, port=port, listener=listener, stop=stop), name="api"
        )
        try:
            await worker.store.wait_for_work(0)
            telemetry.event("stack.started", host=host, port=port)
            announce(f"http://{host}:{port}")
            loop = WorkerLoop(
                dispatch=worker.dispatch,
                wait_for_work=worker.store.wait_for_work,
                telemetry=telemetry,
                poll_interval=settings.worker.poll_interval,
            )
            return await run_worker_process(
                loop=loop,
                sweeps=sweep_schedule(worker, settings),
                grace=settings.worker.shutdown_grace,
                telemetry=telemetry,
            )
        finally:
            stop.set()
            await asyncio.gather(api, return_exceptions=True)
            telemetry.event("stack.stopped")


async def run_api(settings: Settings) -> None:
    """``outboxctl serve``: the HTTP API until SIGINT/SIGTERM, then a clean exit."""
    registry = new_registry()
    async with (
        api_services(settings, registry=registry) as services,
        staff_api_services(settings, telemetry=services.telemetry) as operator,
    ):
        app = create_app(services, registry=registry, operator=operator)
        services.telemetry.event("api.started", host=settings.http.host, port=settings.http.port)
        await serve(app, host=settings.http.host, port=settings.http.port)
        services.telemetry.event("api.stopped")
