"""The HTTP processes: ``outboxctl serve`` (the API) and ``outboxctl up`` (everything at once).

Both serve three listeners: the public one, the admin one (metrics, staff routes) and the
webhook one (provider receipts).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.migrator import apply_migrations
from outbox.adapters.postgres.readiness import PostgresReadinessProbe
from outbox.application.check_readiness import CheckReadiness
from outbox.entrypoints.bootstrap.api import api_identity_services
from outbox.entrypoints.bootstrap.console import build_console, check_console_exposure
from outbox.entrypoints.bootstrap.database import (
    DatabaseAccess,
    database_pool,
    readiness_role,
    resolve_database_url,
)
from outbox.entrypoints.bootstrap.lanes import LaneRequest, open_lanes
from outbox.entrypoints.bootstrap.operator import build_console_services, staff_operator_services
from outbox.entrypoints.bootstrap.parts import (
    ProcessParts,
    build_process_parts,
    http_middleware,
    stop_tracing,
)
from outbox.entrypoints.bootstrap.webhooks import bind_webhook_socket, webhook_listener
from outbox.entrypoints.bootstrap.worker import worker_owner
from outbox.entrypoints.http.app import create_admin_app, create_app
from outbox.entrypoints.http.server import Listener, ServerOptions, bind, serve
from outbox.entrypoints.settings.reader import PREFIX, SettingsError
from outbox.entrypoints.settings.tree import Settings
from outbox.entrypoints.worker.loop import BatchResult
from outbox.entrypoints.worker.process import run_worker_process

# --- outboxctl up: the all-in-one development stack -----------------------------------------


async def run_stack(
    settings: Settings, *, announce: Callable[[str, str], None]
) -> dict[str, BatchResult]:
    """``outboxctl up``: migrate, then the API, the worker's lanes and sweeps in one process.

    With no OUTBOX_DATABASE_URL the embedded PostgreSQL in the data directory is used.
    ``announce`` is told where the public and the admin listener are once they accept
    connections. SIGINT or
    SIGTERM stops the worker (with its grace period), then the API.
    """
    url = await asyncio.to_thread(resolve_database_url, settings)
    await apply_migrations(url)
    sockets = bind_listeners(settings)
    webhook_socket = _bind_webhook(settings, sockets)
    parts = build_process_parts(settings)
    telemetry = parts.telemetry
    async with (
        stop_tracing(parts),
        database_pool(settings, DatabaseAccess.API) as api_pool,
        open_lanes(
            LaneRequest(settings=settings, parts=parts, owner=worker_owner()),
            settings.worker.lanes,
        ) as lanes,
        webhook_listener(settings, parts, api_pool, webhook_socket) as webhooks,
    ):
        public, admin = api_listeners(settings, parts, api_pool, sockets)
        stop = asyncio.Event()
        api = asyncio.create_task(
            serve([public, admin, webhooks], options=server_options(settings), stop=stop),
            name="api",
        )
        try:
            for lane in lanes:
                await lane.start_listening()
            (host, port), (admin_host, admin_port) = public.address, admin.address
            webhook_host, webhook_port = webhooks.address
            telemetry.event(
                "stack.started",
                host=host,
                port=port,
                admin_host=admin_host,
                admin_port=admin_port,
                webhook_host=webhook_host,
                webhook_port=webhook_port,
            )
            announce(f"http://{host}:{port}", f"http://{admin_host}:{admin_port}")
            return await run_worker_process(
                lanes={lane.name: lane.loop for lane in lanes},
                sweeps=[every for lane in lanes for every in lane.sweeps],
                grace=settings.worker.shutdown_grace,
                telemetry=telemetry,
            )
        finally:
            stop.set()
            await asyncio.gather(api, return_exceptions=True)
            telemetry.event("stack.stopped")


async def run_api(settings: Settings) -> None:
    """``outboxctl serve``: both listeners until SIGINT/SIGTERM, then a clean exit."""
    sockets = bind_listeners(settings)
    webhook_socket = _bind_webhook(settings, sockets)
    parts = build_process_parts(settings)
    async with (
        stop_tracing(parts),
        database_pool(settings, DatabaseAccess.API) as api_pool,
        webhook_listener(settings, parts, api_pool, webhook_socket) as webhooks,
    ):
        public, admin = api_listeners(settings, parts, api_pool, sockets)
        # Served anyway (a migration Job may run after the API starts); /readyz stays 503,
        # and this logs readiness.failed with the failing check and the hint once at start.
        probe = PostgresReadinessProbe(api_pool, role=readiness_role(settings, DatabaseAccess.API))
        await CheckReadiness(probe=probe, telemetry=parts.telemetry)()
        (host, port), (admin_host, admin_port) = public.address, admin.address
        webhook_host, webhook_port = webhooks.address
        parts.telemetry.event(
            "api.started",
            host=host,
            port=port,
            admin_host=admin_host,
            admin_port=admin_port,
            webhook_host=webhook_host,
            webhook_port=webhook_port,
        )
        await serve([public, admin, webhooks], options=server_options(settings))
        parts.telemetry.event("api.stopped")


# --- The two listeners -------------------------------------------------------------


def bind_listeners(settings: Settings) -> tuple[socket.socket, socket.socket]:
    """The public and the admin socket, bound before anything else starts.

    Raises SettingsError naming the port variable when its address cannot be listened on.
    """
    http = settings.http
    check_console_exposure(settings)
    bound: list[socket.socket] = []
    for variable, host, port in (
        ("HTTP_PORT", http.host, http.port),
        ("ADMIN_PORT", http.admin_host, http.admin_port),
    ):
        try:
            bound.append(bind(host, port))
        except OSError as error:
            for sock in bound:
                sock.close()
            raise SettingsError(
                PREFIX + variable,
                f"cannot listen on {host}:{port} ({error.strerror}); choose a free port",
            ) from None
    public, admin = bound
    return public, admin


def _bind_webhook(
    settings: Settings, sockets: tuple[socket.socket, socket.socket]
) -> socket.socket:
    """The webhook socket, bound after the other two; they are closed if it cannot be."""
    try:
        return bind_webhook_socket(settings)
    except SettingsError:
        for sock in sockets:
            sock.close()
        raise


def api_listeners(
    settings: Settings,
    parts: ProcessParts,
    pool: AsyncConnectionPool[AsyncConnection],
    sockets: tuple[socket.socket, socket.socket],
) -> tuple[Listener, Listener]:
    """The public listener (identity routes, probes) and the admin one (metrics, staff)."""
    services = api_identity_services(settings, parts, pool)
    operator = staff_operator_services(parts, pool, settings.identity.challenges)
    console = None
    if settings.http.console.enabled:
        console = build_console(
            settings.http.console,
            identity=services,
            operator=operator,
            services=build_console_services(
                pool=pool, operator=operator, clock=parts.clock, telemetry=parts.telemetry
            ),
            clock=parts.clock.now,
        )
    public_socket, admin_socket = sockets
    return (
        Listener(app=create_app(services, middleware=http_middleware(parts)), socket=public_socket),
        Listener(
            app=create_admin_app(
                services, operator=operator, registry=parts.registry, console=console
            ),
            socket=admin_socket,
        ),
    )


def server_options(settings: Settings) -> ServerOptions:
    """How both listeners treat their clients: trusted proxies and the request deadline."""
    return ServerOptions(
        trusted_proxies=settings.http.trusted_proxies,
        request_timeout=settings.http.request_timeout.total_seconds(),
    )
