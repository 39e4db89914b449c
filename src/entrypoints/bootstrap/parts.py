"""The parts every service of one process shares, built once per process.

One clock, one id source, one secret source, one hasher, one sealer and one telemetry (over
one metrics registry): the API, the staff routes and the worker of ``outboxctl up`` take the
same objects, so keys are read once and every metric lands in the same registry.
"""

from __future__ import annotations

import os
import random
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any
from uuid import UUID

import attrs
from prometheus_client import CollectorRegistry

from outbox.adapters.crypto.hashing import Argon2idHasher
from outbox.adapters.system.clock import SystemClock
from outbox.adapters.system.ids import Uuid7Ids
from outbox.adapters.system.secrets import SystemSecrets
from outbox.adapters.telemetry.tracing import (
    Tracing,
    start_tracing,
    tracing_installed,
    tracing_requested,
)
from outbox.application.ports import Clock, Ids, Sealer, SecretHasher, SecretSource, Telemetry
from outbox.domain.delivery.retry_policy import DEFAULT_JITTER, RetryPolicy
from outbox.domain.purposes import Purpose
from outbox.entrypoints.bootstrap.seal_keys import load_sealer
from outbox.entrypoints.observability import build_telemetry, new_registry
from outbox.entrypoints.settings.tree import Settings


@attrs.frozen(kw_only=True)
class ProcessParts:
    """The shared, stateless-or-thread-safe parts of one process."""

    clock: Clock
    ids: Ids
    secret_source: SecretSource
    hasher: SecretHasher
    sealer: Sealer
    telemetry: Telemetry
    registry: CollectorRegistry
    tracing: Tracing | None = None  # OpenTelemetry, when the otel extra is installed and asked for


class _KeysNotLoaded:
    """The sealer of processes that never seal: they need no outbox key at all."""

    # The arguments are the Sealer port's; a command that never seals never calls either.
    def seal(self, *, message_id: UUID, purpose: Purpose, plaintext: str) -> str:  # noqa: ARG002
        """Refuse: the keys were not loaded."""
        raise RuntimeError("this command was started without the outbox keys")

    def open(self, *, message_id: UUID, purpose: Purpose, envelope: str) -> str:  # noqa: ARG002
        """Refuse: the keys were not loaded."""
        raise RuntimeError("this command was started without the outbox keys")


def build_process_parts(
    settings: Settings,
    *,
    seal_keys: bool = True,
    telemetry: Telemetry | None = None,
    process_metrics: bool = True,
    tracing: Tracing | None = None,
) -> ProcessParts:
    """Build the shared parts; ``seal_keys`` False reads no key (a command that never seals).

    A given ``telemetry`` is used as it is (its metrics are then not in ``registry``), and so
    is a given ``tracing``; otherwise the standard OTEL_* variables decide whether to trace.
    Raises SettingsError naming a bad key variable.
    """
    registry = new_registry(process_metrics=process_metrics)
    events = telemetry or build_telemetry(registry)
    sealer: Sealer = (
        load_sealer(
            settings,
            warn=lambda text: events.event("keys.warning", level="warning", detail=text),
        )
        if seal_keys
        else _KeysNotLoaded()
    )
    if tracing is None:
        tracing = start_tracing(os.environ, service="outbox")
        if tracing is None and tracing_requested(os.environ) and not tracing_installed():
            events.event(
                "tracing.unavailable",
                level="warning",
                detail="OTEL_* variables ask for traces; install the otel extra: pg-outbox[otel]",
            )
    return ProcessParts(
        clock=SystemClock(),
        ids=Uuid7Ids(),
        secret_source=SystemSecrets(),
        hasher=Argon2idHasher(),
        sealer=sealer,
        telemetry=events,
        registry=registry,
        tracing=tracing,
    )


def http_middleware(parts: ProcessParts) -> list[Callable[[Any], Any]]:
    """The HTTP app's middleware: a server span per request when the process traces."""
    return [parts.tracing.asgi_middleware()] if parts.tracing is not None else []


@asynccontextmanager
async def stop_tracing(parts: ProcessParts) -> AsyncIterator[None]:
    """Export the buffered spans when the process's work ends, however it ends."""
    try:
        yield
    finally:
        if parts.tracing is not None:
            parts.tracing.shutdown()


def retry_policy(settings: Settings) -> RetryPolicy:
    """The one retry policy of every lane (security messages, tenant events, consumers): the
    schedule, the attempt cap and the suspension probe of the settings, jittered."""
    worker = settings.worker
    return jittered(
        RetryPolicy(
            schedule=worker.retry_schedule,
            max_attempts=worker.max_attempts,
            suspension_probe=worker.suspension_probe,
        )
    )


def jittered(policy: RetryPolicy) -> RetryPolicy:
    """``policy`` with each step lengthened by up to a fifth of itself at random, so that the
    retries of one outage do not come back together."""
    return attrs.evolve(
        policy,
        jitter=DEFAULT_JITTER,
        draw=random.random,  # spreading retries needs no secrecy
    )
