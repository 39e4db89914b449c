"""A real SMTP server on loopback (aiosmtpd) that keeps what it accepts and fails as told."""

from __future__ import annotations

import asyncio
import email
import email.policy
import ssl
from email.message import EmailMessage
from typing import Any

import attrs
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session

from tests.integration.providers.network import free_port

USERNAME = "outbox"
PASSWORD = "s3cret-smtp-password"


@attrs.define
class Accepted:
    """A message the server took: its envelope and the parsed message."""

    mail_from: str
    rcpt_tos: list[str]
    message: EmailMessage


@attrs.define
class Behaviour:
    """What the server does at each step; by default it accepts everything.

    ``mail_reply``/``rcpt_reply``/``data_reply`` replace the success reply (e.g.
    ``"451 4.7.1 Try again later"``); ``drop_at`` ("rcpt" or "data") cuts the
    connection at that step instead of answering; ``stall_data`` waits that long
    after receiving the message before answering it.
    """

    mail_reply: str | None = None
    rcpt_reply: str | None = None
    data_reply: str | None = None
    drop_at: str | None = None
    stall_data: float = 0.0
    accepted: list[Accepted] = attrs.field(factory=list)

    async def handle_MAIL(  # noqa: N802 - aiosmtpd's hook name
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: list[str]
    ) -> str:
        """Take or refuse the sender."""
        if self.mail_reply:
            return self.mail_reply
        envelope.mail_from = address
        envelope.mail_options.extend(options)
        return "250 OK"

    async def handle_RCPT(  # noqa: N802
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: list[str]
    ) -> str:
        """Take or refuse the recipient, or hang up."""
        if self.drop_at == "rcpt":
            _drop(server)
            return "421 dropped"
        if self.rcpt_reply:
            return self.rcpt_reply
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(  # noqa: N802
        self, server: SMTP, session: Session, envelope: Envelope
    ) -> str:
        """Take or refuse the message, stall, or hang up after receiving it."""
        if self.stall_data:
            await asyncio.sleep(self.stall_data)
        if self.drop_at == "data":
            _drop(server)
            return "421 dropped"
        if self.data_reply:
            return self.data_reply
        raw = (envelope.original_content or b"").replace(b"\r\n", b"\n")
        parsed = email.message_from_bytes(raw, policy=email.policy.default)
        assert isinstance(parsed, EmailMessage)
        self.accepted.append(Accepted(str(envelope.mail_from), list(envelope.rcpt_tos), parsed))
        return "250 2.0.0 Ok: queued as 4AB12"


def _drop(server: SMTP) -> None:
    if server.transport is not None:
        server.transport.abort()


def _authenticate(
    server: SMTP, session: Session, envelope: Envelope, mechanism: str, auth_data: Any
) -> AuthResult:
    good = isinstance(auth_data, LoginPassword) and (auth_data.login, auth_data.password) == (
        USERNAME.encode(),
        PASSWORD.encode(),
    )
    return AuthResult(success=good, handled=False)


class SmtpStandIn:
    """An aiosmtpd server on 127.0.0.1: plain, STARTTLS with required AUTH, or implicit TLS."""

    def __init__(
        self,
        behaviour: Behaviour,
        *,
        starttls: ssl.SSLContext | None = None,
        implicit_tls: ssl.SSLContext | None = None,
    ) -> None:
        self.behaviour = behaviour
        self.port = free_port()
        extra: dict[str, Any] = {}
        if starttls is not None:
            extra = {
                "tls_context": starttls,
                "require_starttls": True,
                "auth_required": True,
                "authenticator": _authenticate,
            }
        self._controller = Controller(
            behaviour,
            hostname="127.0.0.1",
            port=self.port,
            ssl_context=implicit_tls,
            server_hostname="mail.test",
            ready_timeout=5.0,
            **extra,
        )

    @property
    def accepted(self) -> list[Accepted]:
        """The messages taken so far."""
        return self.behaviour.accepted

    def start(self) -> None:
        """Start serving in aiosmtpd's thread."""
        self._controller.start()

    def stop(self) -> None:
        """Stop serving (stalled handlers are cancelled)."""
        self._controller.stop()
