"""The HTTP processes: ``outboxctl serve`` (the API) and ``outboxctl up`` (everything at once).

Both serve three listeners: the public one, the admin one (metrics, staff routes) and the
webhook one (provider receipts).
"""

from __future__ import annotations

import asyncio
import contextlib
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
from outbox.entrypoints.bootstrap.served import Served
from outbox.entrypoints.bootstrap.webhooks import bind_webhook_socket, webhook_listener
from outbox.entrypoints.bootstrap.worker import worker_owner
from outbox.entrypoints.http.app import create_admin_app, create_app
from outbox.entrypoints.http.server import Listener, ServerOptions, bind, serve
from outbox.entrypoints.settings.reader import PREFIX, SettingsError
from outbox.entrypoints.settings.tree import Settings
from outbox.entrypoints.worker.loop import BatchResult
from outbox.entrypoints.worker.process import run_worker_process, stop_signals

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
    public_socket, admin_socket = bind_listeners(settings)
    if public_socket is None or admin_socket is None:  # pragma: no cover - ALL binds both
        raise RuntimeError("outboxctl up serves both listeners")
    webhook_socket = _bind_webhook(settings, (public_socket, admin_socket))
    parts = build_process_parts(settings)
    telemetry = parts.telemetry
    async with (
        stop_tracing(parts),
        # Caught before the addresses are announced: a SIGTERM right after ends it cleanly.
        stop_signals(telemetry, grace=settings.worker.shutdown_grace) as stop_worker,
        database_pool(settings, DatabaseAccess.API) as api_pool,
        database_pool(settings, DatabaseAccess.ADMIN) as admin_pool,
        open_lanes(
            LaneRequest(settings=settings, parts=parts, owner=worker_owner()),
            settings.worker.lanes,
        ) as lanes,
        webhook_listener(settings, parts, api_pool, webhook_socket) as webhooks,
    ):
        public = public_listener(settings, parts, api_pool, public_socket)
        admin = admin_listener(settings, parts, admin_pool, admin_socket)
        stop = asyncio.Event()
        api = asyncio.create_task(
            serve([public, admin, webhooks], options=server_options(settings), stop=stop),
            name="api",
        )
        try:
            for lane in lanes:
                await lane.start_listening()
            telemetry.event("stack.started", level="info", **_addresses(public, admin, webhooks))
            announce(_url(public), _url(admin))
            return await run_worker_process(
                lanes={lane.name: lane.loop for lane in lanes},
                sweeps=[every for lane in lanes for every in lane.sweeps],
                grace=settings.worker.shutdown_grace,
                telemetry=telemetry,
                stop=stop_worker,
            )
        finally:
            stop.set()
            await asyncio.gather(api, return_exceptions=True)
            telemetry.event("stack.stopped")


async def run_api(settings: Settings, served: Served = Served.ALL) -> None:
    """``outboxctl serve``: the listeners ``served``, until SIGINT/SIGTERM, then a clean exit."""
    public_socket, admin_socket = bind_listeners(settings, served)
    webhook_socket = None
    if served.public:
        webhook_socket = _bind_webhook(settings, (public_socket, admin_socket))
    parts = build_process_parts(settings)
    async with contextlib.AsyncExitStack() as stack:
        await stack.enter_async_context(stop_tracing(parts))
        public = admin = webhooks = None
        probes: list[PostgresReadinessProbe] = []
        if public_socket is not None and webhook_socket is not None:
            api_pool = await stack.enter_async_context(database_pool(settings, DatabaseAccess.API))
            webhooks = await stack.enter_async_context(
                webhook_listener(settings, parts, api_pool, webhook_socket)
            )
            public = public_listener(settings, parts, api_pool, public_socket)
            probes.append(_probe(settings, api_pool, DatabaseAccess.API))
        if admin_socket is not None:
            admin_pool = await stack.enter_async_context(
                database_pool(settings, DatabaseAccess.ADMIN)
            )
            admin = admin_listener(settings, parts, admin_pool, admin_socket)
            probes.append(_probe(settings, admin_pool, DatabaseAccess.ADMIN))
        # Served anyway (a migration Job may run after the API starts); /readyz stays 503,
        # and this logs readiness.failed with the failing check and the hint once at start.
        for probe in probes:
            await CheckReadiness(probe=probe, telemetry=parts.telemetry)()
        parts.telemetry.event("api.started", level="info", **_addresses(public, admin, webhooks))
        listeners = [listener for listener in (public, admin, webhooks) if listener is not None]
        await serve(listeners, options=server_options(settings))
        parts.telemetry.event("api.stopped")


def _probe(
    settings: Settings, pool: AsyncConnectionPool[AsyncConnection], access: DatabaseAccess
) -> PostgresReadinessProbe:
    return PostgresReadinessProbe(pool, role=readiness_role(settings, access))


def _url(listener: Listener) -> str:
    host, port = listener.address
    return f"http://{host}:{port}"


def _addresses(
    public: Listener | None, admin: Listener | None, webhooks: Listener | None
) -> dict[str, str | int]:
    """The host and port of each listener served, for the started event."""
    fields: dict[str, str | int] = {}
    for prefix, listener in (("", public), ("admin_", admin), ("webhook_", webhooks)):
        if listener is not None:
            host, port = listener.address
            fields[prefix + "host"], fields[prefix + "port"] = host, port
    return fields


# --- The two listeners -------------------------------------------------------------


def bind_listeners(
    settings: Settings, served: Served = Served.ALL
) -> tuple[socket.socket | None, socket.socket | None]:
    """The public and the admin socket (None when not ``served``), bound before anything
    else starts.

    Raises SettingsError naming the port variable when its address cannot be listened on.
    """
    http = settings.http
    if served.admin:
        check_console_exposure(settings)
    wanted = (
        ("HTTP_PORT", http.host, http.port, served.public),
        ("ADMIN_PORT", http.admin_host, http.admin_port, served.admin),
    )
    bound: list[socket.socket | None] = []
    for variable, host, port, wanted_here in wanted:
        if not wanted_here:
            bound.append(None)
            continue
        try:
            bound.append(bind(host, port))
        except OSError as error:
            for sock in bound:
                if sock is not None:
                    sock.close()
            raise SettingsError(
                PREFIX + variable,
                f"cannot listen on {host}:{port} ({error.strerror}); choose a free port",
            ) from None
    public, admin = bound
    return public, admin


def _bind_webhook(
    settings: Settings, sockets: tuple[socket.socket | None, socket.socket | None]
) -> socket.socket:
    """The webhook socket, bound after the other two; they are closed if it cannot be."""
    try:
        return bind_webhook_socket(settings)
    except SettingsError:
        for sock in sockets:
            if sock is not None:
                sock.close()
        raise


def public_listener(
    settings: Settings,
    parts: ProcessParts,
    pool: AsyncConnectionPool[AsyncConnection],
    sock: socket.socket,
) -> Listener:
    """The public listener (identity routes, probes) over the API pool."""
    services = api_identity_services(settings, parts, pool)
    return Listener(app=create_app(services, middleware=http_middleware(parts)), socket=sock)


def admin_listener(
    settings: Settings,
    parts: ProcessParts,
    pool: AsyncConnectionPool[AsyncConnection],
    sock: socket.socket,
) -> Listener:
    """The admin listener (staff sign-in, staff routes, console, metrics) over its own pool.

    Its sessions and elevations are staff ones: only this pool's role may start them.
    """
    services = api_identity_services(settings, parts, pool, DatabaseAccess.ADMIN)
    operator = staff_operator_services(parts, pool, settings)
    console = None
    if settings.http.console.enabled:
        console = build_console(
            settings.http.console,
            identity=services,
            operator=operator,
            services=build_console_services(pool=pool, operator=operator, clock=parts.clock),
            clock=parts.clock.now,
        )
    return Listener(
        app=create_admin_app(services, operator=operator, registry=parts.registry, console=console),
        socket=sock,
    )


def server_options(settings: Settings) -> ServerOptions:
    """How the listeners treat their clients: trusted proxies, the request deadline and the
    connection cap."""
    return ServerOptions(
        trusted_proxies=settings.http.trusted_proxies,
        request_timeout=settings.http.request_timeout.total_seconds(),
        max_connections=settings.http.max_connections,
    )
