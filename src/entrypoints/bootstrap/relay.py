"""The broker relay (SPEC §18), wired from settings: the events lane's JetStream target.

With ``OUTBOX_NATS_URL`` set, the events lane publishes every event to JetStream and records
it published only after the PubAck; without it the lane has no target at all.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence

from adapters.nats.connection import NatsOptions
from adapters.nats.jetstream_target import JetStreamTarget
from application.events.ports import PublicationTarget
from application.ports import Telemetry
from entrypoints.settings.nats import NatsSettings
from entrypoints.settings.tree import Settings


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
    """The configured targets, connected (a broker that is down is retried, never fatal)."""
    if settings.nats is None:
        yield ()
        return
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
