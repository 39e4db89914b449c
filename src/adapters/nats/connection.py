"""Connecting to NATS with the standard client options, and naming servers without secrets."""

from __future__ import annotations

import asyncio
import contextlib
import re
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs
import nats.errors
from nats.aio.client import Client

from outbox.application.ports import Telemetry

MASKED = "***"
# ``scheme://user:password@host`` or ``scheme://token@host``: everything before the ``@``.
_USERINFO = re.compile(r"^(?P<scheme>[A-Za-z][\w+.-]*://)?(?P<userinfo>[^@/]*)@")


def redact_server(url: str) -> str:
    """``url`` with any user, password or token before its ``@`` replaced by ***."""
    return _USERINFO.sub(lambda m: f"{m.group('scheme') or ''}{MASKED}@", url.strip(), count=1)


def redact_servers(servers: tuple[str, ...]) -> str:
    """The servers, comma-separated, as a log line or an error may show them."""
    return ",".join(redact_server(server) for server in servers)


@attrs.frozen(kw_only=True)
class NatsOptions:
    """How to reach NATS: servers, one way to authenticate, TLS; passed to nats-py as is."""

    servers: tuple[str, ...] = attrs.field(repr=False)
    name: str = "outbox"
    credentials_file: Path | None = None  # a .creds file: a user JWT and its NKey seed
    nkey_seed_file: Path | None = None
    user: str | None = None
    password: str | None = attrs.field(default=None, repr=False)
    token: str | None = attrs.field(default=None, repr=False)
    tls_ca_file: Path | None = None
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    connect_timeout: float = 2.0
    reconnect_wait: float = 0.5

    @property
    def shown(self) -> str:
        """The servers without any secret in them."""
        return redact_servers(self.servers)

    def tls_context(self) -> ssl.SSLContext | None:
        """A client TLS context when a CA or client certificate is configured, else None."""
        if self.tls_ca_file is None and self.tls_cert_file is None:
            return None
        context = ssl.create_default_context(
            cafile=str(self.tls_ca_file) if self.tls_ca_file else None
        )
        if self.tls_cert_file is not None:
            context.load_cert_chain(
                str(self.tls_cert_file), str(self.tls_key_file) if self.tls_key_file else None
            )
        return context


async def connect(
    options: NatsOptions, telemetry: Telemetry, *, role: str, reports_outages: bool = False
) -> Client:
    """Connect (raising TimeoutError or nats' NoServersError when none answers), then reconnect
    forever after a drop.

    The client's own callbacks log only an error's class name: nats-py's texts quote the
    server URL, which may carry a password. While the server is away, nats-py reports an
    error on every reconnect try (every ``reconnect_wait``): only the first of an outage is
    a warning, the rest are debug. A normal close is not a disconnection worth a warning.
    ``reports_outages`` (the relay, which says when an outage starts and ends itself) puts
    the errors and the disconnected and reconnected lines at debug.
    """
    client = Client()
    outage = {"erring": False}

    async def error_cb(error: Exception) -> None:
        level = "debug" if outage["erring"] or reports_outages else "warning"
        outage["erring"] = True
        telemetry.event("nats.error", level=level, role=role, error=type(error).__name__)

    def lifecycle(name: str, level: str) -> Callable[[], Awaitable[None]]:
        async def callback() -> None:
            if name == "nats.reconnected":
                outage["erring"] = False
            quiet = reports_outages or client.is_closed
            shown = "debug" if quiet and name != "nats.closed" else level
            telemetry.event(name, level=shown, role=role, servers=options.shown)

        return callback

    extra: dict[str, Any] = {}
    if options.credentials_file is not None:
        extra["user_credentials"] = str(options.credentials_file)
    if options.nkey_seed_file is not None:
        extra["nkeys_seed"] = str(options.nkey_seed_file)
    if options.user is not None:
        extra["user"] = options.user
    if options.password is not None:
        extra["password"] = options.password
    if options.token is not None:
        extra["token"] = options.token
    context = options.tls_context()
    if context is not None:
        extra["tls"] = context
    connecting = client.connect(
        servers=list(options.servers),
        name=options.name,
        # Annotated int in nats-py, which hands both to asyncio as seconds (floats work).
        connect_timeout=options.connect_timeout,  # type: ignore[arg-type]
        reconnect_time_wait=options.reconnect_wait,  # type: ignore[arg-type]
        max_reconnect_attempts=-1,
        allow_reconnect=True,
        error_cb=error_cb,
        disconnected_cb=lifecycle("nats.disconnected", "warning"),
        reconnected_cb=lifecycle("nats.reconnected", "info"),
        closed_cb=lifecycle("nats.closed", "info"),
        **extra,
    )
    # Reconnecting forever also makes nats-py try the first connection forever: bound it.
    bound = options.connect_timeout * (len(options.servers) + 1)
    try:
        await asyncio.wait_for(connecting, bound)
    except BaseException:
        with contextlib.suppress(nats.errors.Error, OSError):
            await client.close()
        raise
    return client


async def close_quietly(client: Client) -> None:
    """Close ``client``; a connection that is already broken is simply dropped.

    Not ``drain``: every publish here awaited its PubAck already, and an inbox's unacked
    messages are delivered again anyway, so draining would only wait (up to 30 s).
    """
    with contextlib.suppress(nats.errors.Error, OSError):
        await client.close()
