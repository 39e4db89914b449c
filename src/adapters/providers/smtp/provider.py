"""Delivery over SMTP (STARTTLS, implicit TLS or plain, optional AUTH) with aiosmtplib."""

from __future__ import annotations

import enum
import ssl

import aiosmtplib

from outbox.adapters.providers.smtp.mime import build_message, message_id_header, sender_address
from outbox.adapters.providers.smtp.replies import reply_detail
from outbox.application.delivery.errors import DeliveryFailed
from outbox.application.delivery.ports import Delivery
from outbox.application.ports import Clock
from outbox.domain.delivery.failures import DeliveryFailure, FailureClass

# Transient replies that mean "slow down / try later" rather than "broken": 421 service
# closing (how most relays answer a rate limit), 450 mailbox busy or greylisted, 451 local
# processing limit, 452 out of storage or too many recipients. Other 4xx are UNAVAILABLE.
THROTTLING_REPLIES = frozenset({421, 450, 451, 452})


class SmtpSecurity(enum.StrEnum):
    """How the connection is protected."""

    STARTTLS = "starttls"  # plain connect, then a required STARTTLS upgrade (port 587)
    TLS = "tls"  # TLS from the first byte (port 465)
    PLAIN = "plain"  # no TLS (a local relay on loopback only)


class _Phase(enum.Enum):
    CONNECT = "connect"  # greeting, EHLO, STARTTLS: nothing about this message yet
    AUTH = "auth"
    ENVELOPE = "envelope"  # MAIL FROM, RCPT TO
    DATA = "data"  # from the DATA command on: the server may have taken the message


class SmtpProvider:
    """One SMTP submission server; a fresh connection per message.

    Failures: 4xx replies are retried (THROTTLED for 421/450/451/452, UNAVAILABLE
    otherwise); 5xx to MAIL, RCPT or DATA are REJECTED; a 5xx to AUTH is
    PROVIDER_SUSPENDED (the credentials are wrong for every message); anything that goes
    wrong before DATA (refused connection, timeout, disconnect, TLS failure, a refused
    greeting) is UNAVAILABLE; a timeout or disconnect from DATA on is INDETERMINATE.
    """

    def __init__(
        self,
        *,
        host: str,
        port: int,
        sender: str,
        clock: Clock,
        timeout: float,
        security: SmtpSecurity = SmtpSecurity.STARTTLS,
        username: str | None = None,
        password: str | None = None,
        tls_context: ssl.SSLContext | None = None,
        local_hostname: str | None = None,
    ) -> None:
        self._host = host
        self._port = port
        self._sender = sender
        address = sender_address(sender)
        self._envelope_from = address.addr_spec
        self._domain = address.domain
        self._clock = clock
        self._timeout = timeout
        self._security = security
        self._username = username
        self._password = password
        self._tls_context = tls_context
        self._local_hostname = local_hostname

    @property
    def name(self) -> str:
        """``smtp``."""
        return "smtp"

    async def send(self, delivery: Delivery) -> str:
        """Send one message; return its Message-ID (without angle brackets).

        Raises DeliveryFailed with the reply code (or the error's class name) as code.
        """
        try:
            message = build_message(
                delivery=delivery, sender=self._sender, domain=self._domain, now=self._clock.now()
            )
        except ValueError:
            raise DeliveryFailed(
                DeliveryFailure(failure_class=FailureClass.REJECTED, code="invalid_message")
            ) from None
        client = aiosmtplib.SMTP(
            hostname=self._host,
            port=self._port,
            timeout=self._timeout,
            use_tls=self._security is SmtpSecurity.TLS,
            start_tls=False,  # upgraded below, explicitly, so a missing STARTTLS is an error
            tls_context=self._tls_context,
            local_hostname=self._local_hostname,
        )
        phase = _Phase.CONNECT
        accepted = False
        try:
            await client.connect()
            if self._security is SmtpSecurity.STARTTLS:
                await client.starttls()
            if self._username is not None:
                phase = _Phase.AUTH
                await client.login(self._username, self._password or "")
            phase = _Phase.ENVELOPE
            await client.mail(self._envelope_from)
            await client.rcpt(delivery.destination)
            phase = _Phase.DATA
            await client.data(message)
            accepted = True
        except (aiosmtplib.SMTPException, OSError) as error:
            raise DeliveryFailed(_classify(error, phase, delivery.destination)) from None
        finally:
            if not accepted:
                client.close()
        await _quit_quietly(client)
        return message_id_header(delivery, self._domain).strip("<>")

    async def aclose(self) -> None:
        """Nothing to release: connections live for one message."""


async def _quit_quietly(client: aiosmtplib.SMTP) -> None:
    """Say QUIT after an accepted message; the message is sent whatever QUIT does."""
    if not client.is_connected:
        return
    try:
        await client.quit()
    except (aiosmtplib.SMTPException, OSError):
        client.close()


def _classify(error: BaseException, phase: _Phase, destination: str) -> DeliveryFailure:
    """Map an aiosmtplib or socket error raised during ``phase`` to the taxonomy.

    A server's reply keeps its enhanced status code and scrubbed text as the detail.
    """
    detail = ""
    if isinstance(error, aiosmtplib.SMTPResponseException):
        detail = reply_detail(error.message, destination=destination)
    if isinstance(error, aiosmtplib.SMTPResponseException) and 400 <= error.code < 600:
        code = str(error.code)
        if error.code < 500:
            throttled = error.code in THROTTLING_REPLIES
            failure_class = FailureClass.THROTTLED if throttled else FailureClass.UNAVAILABLE
        elif phase is _Phase.AUTH:
            failure_class = FailureClass.PROVIDER_SUSPENDED
        elif phase is _Phase.CONNECT:
            failure_class = FailureClass.UNAVAILABLE  # a refused greeting or EHLO
        else:
            failure_class = FailureClass.REJECTED
        return DeliveryFailure(failure_class=failure_class, code=code, detail=detail)
    if isinstance(error, aiosmtplib.SMTPResponseException):
        code = str(error.code)
    else:
        code = type(error).__name__
    if phase is _Phase.DATA:
        return DeliveryFailure(failure_class=FailureClass.INDETERMINATE, code=code, detail=detail)
    return DeliveryFailure(failure_class=FailureClass.UNAVAILABLE, code=code, detail=detail)
