"""The broker relay, wired from settings: the events lane's JetStream target.

With ``OUTBOX_NATS_URL`` set, the events lane publishes every event to JetStream and records
it published only after the PubAck; without it the lane has no target at all.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence

import nats.errors as nats_errors

from outbox.adapters.nats.connection import NatsOptions, close_quietly, connect
from outbox.adapters.nats.jetstream_target import JetStreamTarget
from outbox.adapters.nats.streams import StreamReport, StreamSpec, ensure_stream
from outbox.application.events.ports import PublicationTarget
from outbox.application.ports import Telemetry
from outbox.entrypoints.settings.nats import NatsSettings
from outbox.entrypoints.settings.tree import Settings


def nats_options(nats: NatsSettings, *, name: str) -> NatsOptions:
    """The client options of ``nats``, for a connection called ``name``."""
    return NatsOptions(
        servers=nats.servers,
        name=name,
        credentials_file=nats.credentials_file,
        nkey_seed_file=nats.nkey_seed_file,
        user=nats.user,
        password=nats.password,
        token=nats.token,
        tls_ca_file=nats.tls_ca_file,
        tls_cert_file=nats.tls_cert_file,
        tls_key_file=nats.tls_key_file,
    )


def jetstream_target(nats: NatsSettings, telemetry: Telemetry) -> JetStreamTarget:
    """The relay's target, not yet connected."""
    return JetStreamTarget(
        options=nats_options(nats, name="outbox-relay"),
        telemetry=telemetry,
        stream=nats.stream,
        subject_prefix=nats.subject_prefix,
        ack_timeout=nats.ack_timeout,
        max_in_flight=nats.max_in_flight,
    )


@contextlib.asynccontextmanager
async def relay_targets(
    settings: Settings, telemetry: Telemetry
) -> AsyncIterator[Sequence[PublicationTarget]]:
    """The configured targets, connected (a broker that is down is retried, never fatal).

    The stream is created when it is missing (``outboxctl nats ensure-stream`` does the same,
    and reports or fixes one that differs from the settings).
    """
    if settings.nats is None:
        yield ()
        return
    try:  # a missing stream is created as configured; one that differs is said, not changed
        report = await ensure_relay_stream(settings, telemetry)
    except (BrokerUnreachable, nats_errors.Error) as error:
        telemetry.event("relay.stream_unchecked", level="warning", error=type(error).__name__)
    else:
        for difference in report.differences:
            telemetry.event(
                "relay.stream_differs",
                level="warning",
                stream=report.name,
                setting=difference.setting,
                expected=difference.expected,
                actual=difference.actual,
            )
    target = jetstream_target(settings.nats, telemetry)
    await target.start()
    telemetry.event(
        "relay.started",
        target=target.name,
        stream=target.stream,
        subject_prefix=target.subject_prefix,
        connected=target.connected,
    )
    try:
        yield (target,)
    finally:
        await target.close()


class RelayNotConfigured(Exception):
    """``OUTBOX_NATS_URL`` is unset: there is no stream to ensure."""


class BrokerUnreachable(Exception):
    """No NATS server of the configured ones answered (the message names them, redacted)."""


def stream_spec(nats: NatsSettings) -> StreamSpec:
    """The stream the relay publishes to, as the settings describe it."""
    return StreamSpec(
        name=nats.stream,
        subjects=(f"{nats.subject_prefix}.>",),
        retention=nats.retention.value,
        storage=nats.storage.value,
        replicas=nats.replicas,
        duplicate_window=nats.duplicate_window,
        max_age=nats.max_age,
    )


async def ensure_relay_stream(
    settings: Settings, telemetry: Telemetry, *, update: bool = False
) -> StreamReport:
    """Create the relay's stream, or compare it with the settings (``update``: and fix it).

    Raises RelayNotConfigured, BrokerUnreachable, or nats.js.errors.APIError when JetStream
    refuses (a change it cannot make in place, such as the storage).
    """
    nats = settings.nats
    if nats is None:
        raise RelayNotConfigured("OUTBOX_NATS_URL is unset: the relay is off")
    options = nats_options(nats, name="outboxctl")
    try:
        client = await connect(options, telemetry, role="outboxctl")
    except (nats_errors.Error, OSError, TimeoutError):
        raise BrokerUnreachable(f"no NATS server answered at {options.shown}") from None
    try:
        return await ensure_stream(client.jetstream(), stream_spec(nats), update=update)
    finally:
        await close_quietly(client)
