"""The HTTP processes: ``outboxctl serve`` (the API) and ``outboxctl up`` (everything at once)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from adapters.postgres.migrations import apply_migrations
from application.outbox.dispatch_due_messages import DispatchResult
from entrypoints.bootstrap.api import api_identity_services
from entrypoints.bootstrap.database import DatabaseAccess, database_pool, resolve_database_url
from entrypoints.bootstrap.operator import staff_operator_services
from entrypoints.bootstrap.parts import build_process_parts
from entrypoints.bootstrap.worker import sweep_schedule, worker_services
from entrypoints.http.app import create_app
from entrypoints.http.server import bind, serve
from entrypoints.settings.tree import Settings
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
    parts = build_process_parts(settings)
    telemetry = parts.telemetry
    async with (
        database_pool(settings, DatabaseAccess.API) as api_pool,
        worker_services(settings, parts=parts) as worker,
    ):
        services = api_identity_services(settings, parts, api_pool)
        operator = staff_operator_services(parts, api_pool, settings.identity.challenges)
        app = create_app(services, registry=parts.registry, operator=operator)
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
    parts = build_process_parts(settings)
    async with database_pool(settings, DatabaseAccess.API) as api_pool:
        services = api_identity_services(settings, parts, api_pool)
        operator = staff_operator_services(parts, api_pool, settings.identity.challenges)
        app = create_app(services, registry=parts.registry, operator=operator)
        services.telemetry.event("api.started", host=settings.http.host, port=settings.http.port)
        await serve(app, host=settings.http.host, port=settings.http.port)
        services.telemetry.event("api.stopped")
