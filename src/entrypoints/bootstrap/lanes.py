"""The worker's lanes, one entry each in ``LANE_BUILDERS``: what a lane runs.

Each lane is one outbox: its own use case, loop, sweeps, database pool and wake-up listener,
so a flood in one lane never takes another's connections or delays its claims. Adding a
lane is one entry here and one in ``entrypoints/settings/lanes.py`` (its variables).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

import attrs

from outbox.adapters.postgres.console_store import PostgresWorkerHeartbeat
from outbox.adapters.postgres.event_outbox_store import PostgresEventOutboxStore
from outbox.adapters.postgres.readiness import PostgresReadinessProbe
from outbox.adapters.postgres.work_listener import CONSUMERS_CHANNEL, EVENTS_CHANNEL, WorkListener
from outbox.application.delivery.batch import BatchTally
from outbox.application.delivery.ports import DeliveryProvider
from outbox.application.delivery.sweeps import retention_sweep
from outbox.application.events.consumer_handlers import ConsumerRegistry
from outbox.application.events.ports import PublicationTarget
from outbox.application.events.process_deliveries import ProcessingResult
from outbox.application.events.publish_due_events import PublishDueEvents
from outbox.application.operator.console_views import WORKER_BEAT
from outbox.application.ports import ReadinessProbe, ReadinessReport
from outbox.domain.channels import Channel
from outbox.domain.delivery.retention import RetentionPolicy
from outbox.entrypoints.bootstrap.consumers import (
    ConsumerTurn,
    consumer_pool,
    consumer_role,
    consumer_runner,
    shipped_consumers,
)
from outbox.entrypoints.bootstrap.database import (
    DatabaseAccess,
    database_pool,
    readiness_role,
    resolve_consumers_database_url,
    resolve_worker_database_url,
)
from outbox.entrypoints.bootstrap.parts import ProcessParts, retry_policy
from outbox.entrypoints.bootstrap.relay import relay_targets
from outbox.entrypoints.bootstrap.worker import (
    listen_before_claiming,
    security_listening,
    security_loop,
    sweep_schedule,
    worker_services,
)
from outbox.entrypoints.settings.lanes import (
    CONSUMERS,
    EVENTS,
    SECURITY,
    LaneSettings,
)
from outbox.entrypoints.settings.tree import Settings
from outbox.entrypoints.worker.loop import WorkerLoop
from outbox.entrypoints.worker.schedule import Every


@attrs.frozen(kw_only=True)
class LaneRequest:
    """What every lane is built from: the settings, the process's parts, how it runs."""

    settings: Settings
    parts: ProcessParts
    owner: str  # one lease owner name per process, whatever the lane
    drain: bool = False
    providers: Mapping[Channel, DeliveryProvider] | None = None  # tests replace the configured
    targets: Sequence[PublicationTarget] = ()  # the events lane's; () means the configured ones
    consumers: ConsumerRegistry | None = None  # the consumers lane's; None: the shipped ones


def heartbeats(
    heartbeat: PostgresWorkerHeartbeat | None, *, lane: str, request: LaneRequest
) -> list[Every]:
    """The lane saying, every WORKER_BEAT, that this process runs it (the workers view);
    none for a drain, which ends on its own."""
    if heartbeat is None or request.drain:
        return []
    started_at = request.parts.clock.now()
    return [
        Every(
            name=f"{lane}_heartbeat",
            interval=WORKER_BEAT,
            job=functools.partial(
                heartbeat.beat, owner=request.owner, lane=lane, started_at=started_at
            ),
            telemetry=request.parts.telemetry,
        )
    ]


def _no_providers() -> frozenset[str]:
    return frozenset()


@attrs.frozen(kw_only=True)
class Lane:
    """One lane, open: its loop, its scheduled sweeps, and what readiness asks of it."""

    name: str
    sizing: LaneSettings
    loop: WorkerLoop[Any]
    sweeps: Sequence[Every]
    probe: ReadinessProbe  # the lane's pool and role
    listening: Callable[[], bool]  # whether its LISTEN connection is up
    start_listening: Callable[[], Awaitable[None]]  # LISTEN before the first claim
    providers: Callable[[], frozenset[str]] = _no_providers  # the providers it sends through
    suspended: Callable[[], frozenset[str]] = _no_providers  # of those, the paused ones


LaneBuilder = Callable[[LaneRequest], AbstractAsyncContextManager[Lane]]


@contextlib.asynccontextmanager
async def security_lane(request: LaneRequest) -> AsyncIterator[Lane]:
    """One-time codes, links and notifications: the outbox schema and its providers."""
    settings = request.settings
    sizing = settings.worker.security
    async with worker_services(
        settings, providers=request.providers, parts=request.parts, owner=request.owner
    ) as services:
        dispatch = services.dispatch
        yield Lane(
            name=SECURITY,
            sizing=sizing,
            loop=security_loop(settings, services, drain=request.drain),
            sweeps=[
                *sweep_schedule(services, settings),
                *heartbeats(services.heartbeat, lane=SECURITY, request=request),
            ],
            probe=services.probe,
            listening=security_listening(services, settings.worker.reserved_slot),
            start_listening=lambda: listen_before_claiming(services, settings.worker.reserved_slot),
            providers=lambda: frozenset(p.name for p in dispatch.providers.values()),
            suspended=lambda: frozenset(dispatch.breaker.paused()),
        )


@contextlib.asynccontextmanager
async def events_lane(request: LaneRequest) -> AsyncIterator[Lane]:
    """Tenant business events: the events schema, published to every configured target.

    Its pool holds a connection per batch in flight and one for its retention sweep, apart
    from the security lane's, so an events flood can never take a code's connection.
    """
    settings, telemetry = request.settings, request.parts.telemetry
    worker, sweeps = settings.worker, settings.sweeps
    sizing = worker.lane_sizing[EVENTS]
    # The broker relay is the configured target; the internal consumers are not one
    # (their deliveries are written when the publication is recorded). An embedding process
    # (the reliability harness's recording target) may pass its own instead.
    url = resolve_worker_database_url(settings)
    async with (
        contextlib.nullcontext(request.targets)
        if request.targets
        else relay_targets(settings, telemetry) as targets,
        database_pool(
            settings, DatabaseAccess.WORKER, max_size=sizing.parallel_batches + 1
        ) as pool,
    ):
        listener = WorkListener(url, EVENTS_CHANNEL)
        try:
            store = PostgresEventOutboxStore(pool, listener)
            publish = PublishDueEvents(
                store=store,
                targets=targets,
                clock=request.parts.clock,
                telemetry=telemetry,
                policy=retry_policy(settings),
                owner=request.owner,
                batch_size=sizing.batch_size,
                concurrency=sizing.concurrency,
                lease=worker.lease,
                target_timeout=worker.provider_timeout,
            )
            purge = retention_sweep(
                store,
                telemetry,
                name="events_retention",
                retention=RetentionPolicy(
                    published=sweeps.published_retention,
                    dead_lettered=sweeps.dead_lettered_retention,
                ),
                batch_size=sweeps.batch_size,
            )
            yield Lane(
                name=EVENTS,
                sizing=sizing,
                loop=WorkerLoop(
                    dispatch=publish,
                    wait_for_work=store.wait_for_work,
                    telemetry=telemetry,
                    poll_interval=worker.poll_interval,
                    drain=request.drain,
                    parallel_batches=sizing.parallel_batches,
                    totals=BatchTally(),
                ),
                sweeps=[
                    Every(
                        name="events_retention",
                        interval=sweeps.retention_interval,
                        job=purge,
                        telemetry=telemetry,
                    ),
                    *heartbeats(PostgresWorkerHeartbeat(pool), lane=EVENTS, request=request),
                ],
                probe=PostgresReadinessProbe(
                    pool, role=readiness_role(settings, DatabaseAccess.WORKER)
                ),
                listening=lambda: listener.listening,
                start_listening=lambda: store.wait_for_work(0),
            )
        finally:
            await listener.close()


@contextlib.asynccontextmanager
async def consumers_lane(request: LaneRequest) -> AsyncIterator[Lane]:
    """The consumers of tenant events this package ships, inside the worker.

    A consumer runs with its module's role, never the worker's: the lane's pool is the one
    ``outboxctl consume`` opens (the API's URL and role, the identity module's). While nothing
    is due it waits for the fan-out's ``consumers_work`` notification, or the poll interval.
    With no shipped consumer the lane opens nothing and only idles.
    """
    settings, parts = request.settings, request.parts
    sizing = settings.worker.lane_sizing[CONSUMERS]
    registry = (
        request.consumers
        if request.consumers is not None
        else shipped_consumers(clock=parts.clock, ids=parts.ids)
    )
    async with contextlib.AsyncExitStack() as stack:
        probe: ReadinessProbe = _AlwaysReady()
        dispatch: Callable[[], Awaitable[ProcessingResult]] = _nothing
        wait_for_work: Callable[[float], Awaitable[None]] = _poll
        listening: Callable[[], bool] = lambda: True  # noqa: E731 - nothing to listen for
        start_listening: Callable[[], Awaitable[None]] = _listen_to_nothing
        beats: list[Every] = []
        if registry.consumers:
            url = await asyncio.to_thread(resolve_consumers_database_url, settings)
            pool = await stack.enter_async_context(
                consumer_pool(
                    settings, max_size=sizing.concurrency * sizing.parallel_batches + 1, url=url
                )
            )
            listener = WorkListener(url, CONSUMERS_CHANNEL)
            stack.push_async_callback(listener.close)
            dispatch = ConsumerTurn(
                process=consumer_runner(
                    settings,
                    parts,
                    pool=pool,
                    registry=registry,
                    owner=request.owner,
                    batch_size=sizing.batch_size,
                    concurrency=sizing.concurrency,
                ),
                consumers=registry.consumers,
                telemetry=parts.telemetry,
            )
            probe = PostgresReadinessProbe(pool, role=consumer_role(settings))
            wait_for_work = listener.wait
            listening = lambda: listener.listening  # noqa: E731
            start_listening = lambda: listener.wait(0)  # noqa: E731
            beats = heartbeats(PostgresWorkerHeartbeat(pool), lane=CONSUMERS, request=request)
        yield Lane(
            name=CONSUMERS,
            sizing=sizing,
            loop=WorkerLoop(
                dispatch=dispatch,
                wait_for_work=wait_for_work,
                telemetry=parts.telemetry,
                poll_interval=settings.worker.poll_interval,
                drain=request.drain,
                parallel_batches=sizing.parallel_batches,
                totals=ProcessingResult(),
            ),
            sweeps=beats,
            probe=probe,
            listening=listening,
            start_listening=start_listening,
        )


class _AlwaysReady:
    """The readiness of a lane with nothing to run."""

    async def check(self) -> ReadinessReport:
        """Ready: it reaches nothing."""
        return ReadinessReport(database_reachable=True)


async def _nothing() -> ProcessingResult:
    return ProcessingResult()


async def _poll(seconds: float) -> None:
    await asyncio.sleep(seconds)


async def _listen_to_nothing() -> None:
    return None


# In the order a worker opens them; the keys are the lane names of settings/lanes.py.
LANE_BUILDERS: Mapping[str, LaneBuilder] = {
    SECURITY: security_lane,
    EVENTS: events_lane,
    CONSUMERS: consumers_lane,
}


@contextlib.asynccontextmanager
async def open_lanes(request: LaneRequest, names: Sequence[str]) -> AsyncIterator[list[Lane]]:
    """Open the named lanes (``start_listening`` each before its first claim); close them all."""
    async with contextlib.AsyncExitStack() as stack:
        yield [await stack.enter_async_context(LANE_BUILDERS[name](request)) for name in names]
