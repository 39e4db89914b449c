"""The worker's lanes, one entry each in ``LANE_BUILDERS``: what a lane runs (SPEC §16).

Each lane is one outbox: its own use case, loop, sweeps, database pool and wake-up listener,
so a flood in one lane never takes another's connections or delays its claims. Adding a
lane is one entry here and one in ``entrypoints/settings/lanes.py`` (its variables).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

import attrs

from application.outbox.dispatch_due_messages import DispatchResult
from application.outbox.ports import DeliveryProvider
from application.ports import ReadinessProbe
from domain.channels import Channel
from entrypoints.bootstrap.parts import ProcessParts
from entrypoints.bootstrap.worker import sweep_schedule, worker_services
from entrypoints.settings.lanes import SECURITY, LaneSettings
from entrypoints.settings.tree import Settings
from entrypoints.worker.loop import WorkerLoop
from entrypoints.worker.schedule import Every


@attrs.frozen(kw_only=True)
class LaneRequest:
    """What every lane is built from: the settings, the process's parts, how it runs."""

    settings: Settings
    parts: ProcessParts
    owner: str  # one lease owner name per process, whatever the lane
    drain: bool = False
    providers: Mapping[Channel, DeliveryProvider] | None = None  # tests replace the configured


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
            loop=WorkerLoop(
                dispatch=dispatch,
                wait_for_work=services.store.wait_for_work,
                telemetry=services.telemetry,
                poll_interval=settings.worker.poll_interval,
                drain=request.drain,
                parallel_batches=sizing.parallel_batches,
                totals=DispatchResult(),
            ),
            sweeps=sweep_schedule(services, settings),
            probe=services.probe,
            listening=services.listening,
            start_listening=lambda: services.store.wait_for_work(0),
            providers=lambda: frozenset(p.name for p in dispatch.providers.values()),
            suspended=lambda: frozenset(dispatch.breaker.paused()),
        )


# In the order a worker opens them; the keys are the lane names of settings/lanes.py.
LANE_BUILDERS: Mapping[str, LaneBuilder] = {
    SECURITY: security_lane,
}


@contextlib.asynccontextmanager
async def open_lanes(request: LaneRequest, names: Sequence[str]) -> AsyncIterator[list[Lane]]:
    """Open the named lanes (``start_listening`` each before its first claim); close them all."""
    async with contextlib.AsyncExitStack() as stack:
        yield [await stack.enter_async_context(LANE_BUILDERS[name](request)) for name in names]
