"""The broker relay's settings: where NATS is, how to log in, the stream.

``OUTBOX_NATS_URL`` turns the relay on: without it nothing else here is read, and the events
lane publishes to the internal consumers only.
"""

from __future__ import annotations

import enum
import re
from datetime import timedelta
from pathlib import Path

import attrs

from outbox.entrypoints.settings.reader import MASKED, EnvironmentReader

_SCHEMES = ("nats://", "tls://", "ws://", "wss://")
_STREAM_NAME = re.compile(r"^[A-Za-z0-9_-]{1,255}$")
_SUBJECT_TOKEN = re.compile(r"^[A-Za-z0-9_-]+$")
_USERINFO = re.compile(r"//[^@/]*@")


class Retention(enum.StrEnum):
    """JetStream's retention policies."""

    LIMITS = "limits"
    INTEREST = "interest"
    WORKQUEUE = "workqueue"


class Storage(enum.StrEnum):
    """Where JetStream keeps the stream."""

    FILE = "file"
    MEMORY = "memory"


@attrs.frozen(kw_only=True)
class NatsSettings:
    """The relay's connection, its stream, and how it publishes."""

    servers: tuple[str, ...] = attrs.field(repr=False)
    credentials_file: Path | None
    nkey_seed_file: Path | None
    user: str | None
    password: str | None = attrs.field(repr=False)
    token: str | None = attrs.field(repr=False)
    tls_ca_file: Path | None
    tls_cert_file: Path | None
    tls_key_file: Path | None
    stream: str
    subject_prefix: str
    duplicate_window: timedelta
    ack_timeout: timedelta
    max_in_flight: int  # publishes awaiting their PubAck at once
    replicas: int
    max_age: timedelta | None  # None: kept until the limits say otherwise
    retention: Retention
    storage: Storage


def shown_servers(value: str) -> str:
    """The servers as an error may quote them: no user, password or token."""
    return repr(_USERINFO.sub(f"//{MASKED}@", value))


def read_nats_settings(read: EnvironmentReader) -> NatsSettings | None:
    """The ``OUTBOX_NATS_*`` variables, or None when ``OUTBOX_NATS_URL`` is unset."""
    raw = read.raw("NATS_URL")
    if raw is None:
        return None
    servers = tuple(part.strip() for part in raw.split(",") if part.strip())
    if not servers or not all(server.startswith(_SCHEMES) for server in servers):
        read.refuse(
            "NATS_URL",
            "expected comma-separated nats://host:port (or tls://, ws://, wss://) servers,"
            f" got {shown_servers(raw)}",
            None,
        )
    stream = read.text("NATS_STREAM", "OUTBOX_EVENTS")
    if not _STREAM_NAME.match(stream):
        read.refuse("NATS_STREAM", "expected letters, digits, - and _ only", None)
    prefix = read.text("NATS_SUBJECT_PREFIX", "outbox.events")
    if not all(_SUBJECT_TOKEN.match(token) for token in prefix.split(".")):
        read.refuse(
            "NATS_SUBJECT_PREFIX",
            f"expected dot-separated tokens of letters, digits, - and _, got {prefix!r}",
            None,
        )
    cert, key = read.existing_file("NATS_TLS_CERT_FILE"), read.existing_file("NATS_TLS_KEY_FILE")
    if key is not None and cert is None:
        read.refuse("NATS_TLS_KEY_FILE", "needs OUTBOX_NATS_TLS_CERT_FILE too", None)
    max_age = read.seconds("NATS_MAX_AGE_SECONDS", 0, minimum=0)
    return NatsSettings(
        servers=servers,
        credentials_file=read.existing_file("NATS_CREDENTIALS_FILE"),
        nkey_seed_file=read.existing_file("NATS_NKEY_SEED_FILE"),
        user=read.raw("NATS_USER"),
        password=read.raw("NATS_PASSWORD"),
        token=read.raw("NATS_TOKEN"),
        tls_ca_file=read.existing_file("NATS_TLS_CA_FILE"),
        tls_cert_file=cert,
        tls_key_file=key,
        stream=stream,
        subject_prefix=prefix,
        duplicate_window=read.seconds("NATS_DUPLICATE_WINDOW_SECONDS", 120, minimum=1),
        ack_timeout=read.seconds("NATS_ACK_TIMEOUT_SECONDS", 5),
        max_in_flight=read.integer("NATS_MAX_IN_FLIGHT", 256),
        replicas=read.integer("NATS_REPLICAS", 1, maximum=5),
        max_age=max_age or None,
        retention=read.choice("NATS_RETENTION", Retention.LIMITS, Retention),
        storage=read.choice("NATS_STORAGE", Storage.FILE, Storage),
    )
