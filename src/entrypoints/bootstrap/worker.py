"""The security lane of the worker: dispatch, sweeps, the listener and provider clients."""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Any

import attrs
from prometheus_client import CollectorRegistry

from outbox.adapters.postgres.console_store import PostgresPausedProviders, PostgresWorkerHeartbeat
from outbox.adapters.postgres.dispatch_store import PostgresDispatchStore
from outbox.adapters.postgres.readiness import PostgresReadinessProbe
from outbox.adapters.postgres.work_listener import URGENT_CHANNEL, WorkListener
from outbox.adapters.templates.renderer import JinjaRenderer
from outbox.application.delivery.batch import BatchTally
from outbox.application.delivery.dispatch_due_messages import DispatchDueMessages
from outbox.application.delivery.links import LinkBases
from outbox.application.delivery.ports import DeliveryProvider, DispatchStore
from outbox.application.delivery.provider_breaker import ProviderBreaker
from outbox.application.delivery.provider_pauses import ProviderPauseBoard
from outbox.application.delivery.sweeps import Sweep, expiry_sweep, retention_sweep
from outbox.application.ports import ReadinessProbe, Telemetry
from outbox.domain.channels import Channel
from outbox.domain.delivery.retention import RetentionPolicy
from outbox.entrypoints.bootstrap.database import (
    DatabaseAccess,
    database_pool,
    readiness_role,
    resolve_worker_database_url,
)
from outbox.entrypoints.bootstrap.parts import (
    ProcessParts,
    build_process_parts,
    retry_policy,
    stop_tracing,
)
from outbox.entrypoints.bootstrap.providers import (
    build_providers,
    build_rate_limits,
    close_providers,
)
from outbox.entrypoints.settings.lanes import SECURITY, ReservedSlot
from outbox.entrypoints.settings.tree import Settings
from outbox.entrypoints.worker.loop import WorkerLoop
from outbox.entrypoints.worker.schedule import Every


@attrs.frozen(kw_only=True)
class WorkerServices:
    """Everything a worker process runs: dispatch, sweeps, and the wake-up source."""

    dispatch: DispatchDueMessages
    expire: Sweep
    purge: Sweep
    store: DispatchStore
    telemetry: Telemetry
    registry: CollectorRegistry
    probe: ReadinessProbe  # the worker's pool and role: reachable, role usable, migrated
    listening: Callable[[], bool]  # whether the LISTEN connection is up
    heartbeat: PostgresWorkerHeartbeat | None = None  # the workers view, on the lane's pool
    # Where claims start (0047), recomputed off the claims' path; None: no claim floor.
    refresh_claim_floor: Callable[[], Awaitable[int]] | None = None
    # The reserved slot's wake-up: high-priority enqueues only (0049); None: the lane's own.
    wait_for_urgent_work: Callable[[float], Awaitable[None]] | None = None
    urgent_listening: Callable[[], bool] = bool  # whether the reserved slot's LISTEN is up


@contextlib.asynccontextmanager
async def worker_services(
    settings: Settings,
    *,
    batch_size: int | None = None,
    concurrency: int | None = None,
    providers: Mapping[Channel, DeliveryProvider] | None = None,
    parts: ProcessParts | None = None,
    owner: str | None = None,
) -> AsyncIterator[WorkerServices]:
    """Open the security lane's pool, listener and provider clients; close them all on exit.

    ``batch_size`` and ``concurrency`` replace the security lane's configured ones;
    ``providers`` replaces the configured providers (tests and benchmarks use it); ``parts``
    are the process's shared parts when other lanes or the API run in the same process
    (built here otherwise); ``owner`` is the process's lease owner name (made here otherwise).
    Raises SettingsError naming a bad variable, StoreUnavailable if the database is down.
    """
    owns_parts = parts is None
    parts = parts or build_process_parts(settings)
    clock, telemetry = parts.clock, parts.telemetry
    renderer = JinjaRenderer(override_dir=settings.template_dir)
    renderer.preload()
    worker = settings.worker
    url = resolve_worker_database_url(settings)
    async with contextlib.AsyncExitStack() as stack:
        if owns_parts:
            await stack.enter_async_context(stop_tracing(parts))
        sizing = attrs.evolve(
            worker.security,
            batch_size=batch_size or worker.security.batch_size,
            concurrency=concurrency or worker.security.concurrency,
        )
        if providers is None:
            # Provider clients are sized for the sends this worker makes (--concurrency wins).
            sized = attrs.evolve(settings, worker=worker.resized(SECURITY, sizing))
            built = build_providers(sized, clock=clock)
            stack.push_async_callback(close_providers, built)
            providers = built
        pool = await stack.enter_async_context(database_pool(settings, DatabaseAccess.WORKER))
        listener = WorkListener(url)
        stack.push_async_callback(listener.close)
        urgent = WorkListener(url, URGENT_CHANNEL)
        stack.push_async_callback(urgent.close)
        postgres = PostgresDispatchStore(pool, listener)
        store: DispatchStore = postgres
        if parts.tracing is not None:
            # Each message's claim, send and record join the trace of the request that made it.
            store = parts.tracing.traced_store(store)
            providers = {
                channel: parts.tracing.traced_provider(provider)
                for channel, provider in providers.items()
            }
        role = readiness_role(settings, DatabaseAccess.WORKER)
        sweeps = settings.sweeps
        yield WorkerServices(
            dispatch=DispatchDueMessages(
                store=store,
                sealer=parts.sealer,
                renderer=renderer,
                providers=providers,
                clock=clock,
                telemetry=telemetry,
                policy=retry_policy(settings),
                breaker=ProviderBreaker(),
                links=LinkBases(
                    invitation=settings.invitation_link_base_url,
                    magic_link=settings.magic_link_base_url,
                ),
                owner=owner or worker_owner(),
                batch_size=sizing.batch_size,
                concurrency=sizing.concurrency,
                lease=worker.lease,
                provider_timeout=worker.provider_timeout,
                rate_limits=build_rate_limits(settings),
                pauses=ProviderPauseBoard(PostgresPausedProviders(pool)),
            ),
            expire=expiry_sweep(store, telemetry, sweeps.batch_size),
            purge=retention_sweep(
                store,
                telemetry,
                retention=RetentionPolicy(
                    published=sweeps.published_retention,
                    dead_lettered=sweeps.dead_lettered_retention,
                ),
                batch_size=sweeps.batch_size,
            ),
            store=store,
            telemetry=telemetry,
            registry=parts.registry,
            probe=PostgresReadinessProbe(pool, role=role),
            listening=lambda: listener.listening,
            heartbeat=PostgresWorkerHeartbeat(pool),
            refresh_claim_floor=postgres.refresh_claim_floor,
            wait_for_urgent_work=urgent.wait,
            urgent_listening=lambda: urgent.listening,
        )


def worker_owner() -> str:
    """A lease owner name that tells operators which host and process holds a message.

    ``host:pid<pid>:<8 hex>``: no part is a bare run of six digits, which the log redaction
    takes for a one-time code (a six-digit pid or an all-digit suffix would be masked, and
    the owner in ``worker.started`` would no longer match the leases it holds).
    """
    return f"{socket.gethostname()}:pid{os.getpid()}:{secrets.token_hex(4)}"


CLAIM_FLOOR_EVERY = timedelta(seconds=1)


def security_loop(
    settings: Settings,
    services: WorkerServices,
    *,
    drain: bool,
    dispatch: DispatchDueMessages | None = None,
) -> WorkerLoop[BatchTally]:
    """The lane's batches with its reserved slot beside them (a code never waits behind a
    batch of notifications in flight), or only one of the two (``OUTBOX_WORKER_RESERVED_SLOT``:
    ``--lane-processes`` gives the slot a process of its own). ``dispatch`` replaces the
    services' own (the benchmark times its claims)."""
    dispatch = dispatch or services.dispatch
    slot = settings.worker.reserved_slot
    common: dict[str, Any] = {
        "telemetry": services.telemetry,
        "poll_interval": settings.worker.poll_interval,
        "drain": drain,
        "totals": BatchTally(),
        "parallel_batches": settings.worker.security.parallel_batches,
    }
    if slot is ReservedSlot.ONLY:
        return WorkerLoop(
            dispatch=dispatch.urgent_only(),
            wait_for_work=_slot_wake_up(services),
            **common,
        )
    if slot is ReservedSlot.ELSEWHERE:
        return WorkerLoop(
            # A slot in another process: the batches leave it each fresh code for a moment.
            dispatch=dispatch.leaving_urgent(settings.worker.slot_grace),
            wait_for_work=services.store.wait_for_work,
            **common,
        )
    reserved = dispatch.reserved_slot()
    return WorkerLoop(
        dispatch=dispatch,
        wait_for_work=services.store.wait_for_work,
        reserved=reserved,
        wait_for_reserved=services.wait_for_urgent_work,
        reserved_batch=reserved.batch_size,  # a burst of codes wakes the batches too
        **common,
    )


def _slot_wake_up(services: WorkerServices) -> Callable[[float], Awaitable[None]]:
    """What wakes the reserved slot: its own channel, or the lane's when it has none."""
    return services.wait_for_urgent_work or services.store.wait_for_work


async def listen_before_claiming(services: WorkerServices, slot: ReservedSlot) -> None:
    """LISTEN before the first claim on the channels ``security_loop`` waits on, and only
    those (a LISTEN nobody reads holds PostgreSQL's notification queue back for every
    session): the lane's for its batches, the reserved slot's for the slot."""
    if slot is not ReservedSlot.ONLY:
        await services.store.wait_for_work(0)
    if slot is not ReservedSlot.ELSEWHERE:
        await _slot_wake_up(services)(0)


def security_listening(services: WorkerServices, slot: ReservedSlot) -> Callable[[], bool]:
    """Whether the LISTEN ``security_loop`` waits on is up (the slot's alone, with ``only``)."""
    if slot is ReservedSlot.ONLY and services.wait_for_urgent_work is not None:
        return services.urgent_listening
    return services.listening


def sweep_schedule(services: WorkerServices, settings: Settings) -> list[Every]:
    """The sweeps a worker runs on its own schedule."""
    refresh = services.refresh_claim_floor
    return [
        # Where claims start (0047): recomputed every second off the claims' path.
        *(
            [
                Every(
                    name="claim_floor",
                    interval=CLAIM_FLOOR_EVERY,
                    job=refresh,
                    telemetry=services.telemetry,
                )
            ]
            if refresh is not None
            else []
        ),
        Every(
            name="expiry",
            interval=settings.sweeps.expiry_interval,
            job=services.expire,
            telemetry=services.telemetry,
        ),
        Every(
            name="retention",
            interval=settings.sweeps.retention_interval,
            job=services.purge,
            telemetry=services.telemetry,
        ),
    ]
