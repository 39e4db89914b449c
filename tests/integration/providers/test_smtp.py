"""SMTP against a real aiosmtpd server on loopback that can be told to fail."""

from __future__ import annotations

import ssl
from collections.abc import Iterator

import attrs
import pytest

from outbox.adapters.providers.smtp.provider import SmtpProvider, SmtpSecurity
from outbox.application.delivery.errors import DeliveryFailed
from outbox.domain.delivery.failures import FailureClass
from tests.fakes.clock import FixedClock
from tests.fakes.deliveries import CODE, EMAIL, MESSAGE_ID, email_delivery, leaks
from tests.integration.providers.smtp_stand_in import PASSWORD, USERNAME, Behaviour, SmtpStandIn

TIMEOUT = 0.5
SENDER = "Example <no-reply@example.org>"


@pytest.fixture
def behaviour() -> Behaviour:
    """What the plain server does; accepts everything unless a test says otherwise."""
    return Behaviour()


@pytest.fixture
def server(behaviour: Behaviour) -> Iterator[SmtpStandIn]:
    """A plain SMTP server on loopback."""
    stand_in = SmtpStandIn(behaviour)
    stand_in.start()
    yield stand_in
    stand_in.stop()


def _provider(clock: FixedClock, port: int, **options: object) -> SmtpProvider:
    settings: dict[str, object] = {"security": SmtpSecurity.PLAIN} | options
    return SmtpProvider(
        host="127.0.0.1",
        port=port,
        sender=SENDER,
        clock=clock,
        timeout=TIMEOUT,
        local_hostname="worker.test",
        **settings,  # type: ignore[arg-type]
    )


async def _refusal(provider: SmtpProvider) -> DeliveryFailed:
    with pytest.raises(DeliveryFailed) as raised:
        await provider.send(email_delivery())
    return raised.value


async def test_a_message_is_delivered_as_text_with_an_html_alternative(
    clock: FixedClock, server: SmtpStandIn
) -> None:
    provider_id = await _provider(clock, server.port).send(email_delivery())

    [accepted] = server.accepted
    message = accepted.message
    assert f"{MESSAGE_ID}@example.org" == provider_id
    assert ("no-reply@example.org", [EMAIL]) == (accepted.mail_from, accepted.rcpt_tos)
    assert SENDER == message["From"]
    assert EMAIL == message["To"]
    assert "Your verification code" == message["Subject"]
    assert f"<{MESSAGE_ID}@example.org>" == message["Message-ID"]
    assert clock.now() == message["Date"].datetime
    assert "multipart/alternative" == message.get_content_type()
    text = message.get_body(("plain",))
    html = message.get_body(("html",))
    assert text is not None
    assert html is not None
    assert f"Your code is {CODE}. It expires in 10 minutes.\n" == text.get_content()
    assert f"<p>Your code is <strong>{CODE}</strong>.</p>\n" == html.get_content()


async def test_a_message_without_html_is_plain_text(clock: FixedClock, server: SmtpStandIn) -> None:
    await _provider(clock, server.port).send(email_delivery(html=False))

    assert "text/plain" == server.accepted[0].message.get_content_type()


async def test_starttls_with_auth_delivers(
    clock: FixedClock, server_tls: ssl.SSLContext, client_tls: ssl.SSLContext
) -> None:
    behaviour = Behaviour()
    server = SmtpStandIn(behaviour, starttls=server_tls)
    server.start()
    try:
        provider = _provider(
            clock,
            server.port,
            security=SmtpSecurity.STARTTLS,
            username=USERNAME,
            password=PASSWORD,
            tls_context=client_tls,
        )
        await provider.send(email_delivery())
    finally:
        server.stop()

    assert [EMAIL] == behaviour.accepted[0].rcpt_tos


async def test_implicit_tls_delivers(
    clock: FixedClock, server_tls: ssl.SSLContext, client_tls: ssl.SSLContext
) -> None:
    behaviour = Behaviour()
    server = SmtpStandIn(behaviour, implicit_tls=server_tls)
    server.start()
    try:
        provider = _provider(clock, server.port, security=SmtpSecurity.TLS, tls_context=client_tls)
        await provider.send(email_delivery())
    finally:
        server.stop()

    assert 1 == len(behaviour.accepted)


async def test_refused_credentials_suspend_the_provider(
    clock: FixedClock, server_tls: ssl.SSLContext, client_tls: ssl.SSLContext
) -> None:
    server = SmtpStandIn(Behaviour(), starttls=server_tls)
    server.start()
    try:
        provider = _provider(
            clock,
            server.port,
            security=SmtpSecurity.STARTTLS,
            username=USERNAME,
            password="wrong-password",
            tls_context=client_tls,
        )
        failed = await _refusal(provider)
    finally:
        server.stop()

    assert (FailureClass.PROVIDER_SUSPENDED, "535") == (
        failed.failure.failure_class,
        failed.failure.code,
    )
    assert [] == leaks(failed, "wrong-password", USERNAME, EMAIL, CODE)


async def test_an_untrusted_certificate_is_unavailable_and_nothing_is_sent(
    clock: FixedClock, server_tls: ssl.SSLContext
) -> None:
    behaviour = Behaviour()
    server = SmtpStandIn(behaviour, implicit_tls=server_tls)
    server.start()
    try:
        provider = _provider(
            clock, server.port, security=SmtpSecurity.TLS, tls_context=ssl.create_default_context()
        )
        failed = await _refusal(provider)
    finally:
        server.stop()

    assert FailureClass.UNAVAILABLE == failed.failure.failure_class
    assert [] == behaviour.accepted


async def test_a_server_without_starttls_is_unavailable_rather_than_plaintext(
    clock: FixedClock, server: SmtpStandIn
) -> None:
    failed = await _refusal(_provider(clock, server.port, security=SmtpSecurity.STARTTLS))

    assert FailureClass.UNAVAILABLE == failed.failure.failure_class
    assert [] == server.accepted


@pytest.mark.parametrize(
    ("step", "reply", "failure_class"),
    [
        ("mail_reply", "421 4.7.0 Too many connections, slow down", FailureClass.THROTTLED),
        ("mail_reply", "451 4.3.0 Local error in processing", FailureClass.THROTTLED),
        ("rcpt_reply", "450 4.2.0 Mailbox busy, greylisted", FailureClass.THROTTLED),
        ("data_reply", "452 4.3.1 Insufficient system storage", FailureClass.THROTTLED),
        ("rcpt_reply", "454 4.7.0 Temporary authentication failure", FailureClass.UNAVAILABLE),
        ("mail_reply", "553 5.7.1 Sender address rejected", FailureClass.REJECTED),
        ("rcpt_reply", "550 5.1.1 No such user", FailureClass.REJECTED),
        ("data_reply", "554 5.7.1 Message rejected as spam", FailureClass.REJECTED),
    ],
)
async def test_replies_are_classified_by_code(
    *,
    clock: FixedClock,
    server: SmtpStandIn,
    behaviour: Behaviour,
    step: str,
    reply: str,
    failure_class: FailureClass,
) -> None:
    setattr(behaviour, step, reply)

    failure = (await _refusal(_provider(clock, server.port))).failure

    assert (failure_class, reply[:3]) == (failure.failure_class, failure.code)


async def test_a_refused_connection_is_unavailable(clock: FixedClock, refused_port: int) -> None:
    failure = (await _refusal(_provider(clock, refused_port))).failure

    assert (FailureClass.UNAVAILABLE, "SMTPConnectError") == (failure.failure_class, failure.code)


async def test_a_connect_timeout_is_unavailable(clock: FixedClock, unreachable_port: int) -> None:
    failure = (await _refusal(_provider(clock, unreachable_port))).failure

    assert FailureClass.UNAVAILABLE == failure.failure_class
    assert "SMTPConnectTimeoutError" == failure.code


async def test_a_disconnect_before_data_is_unavailable(
    clock: FixedClock, server: SmtpStandIn, behaviour: Behaviour
) -> None:
    behaviour.drop_at = "rcpt"

    failure = (await _refusal(_provider(clock, server.port))).failure

    assert (FailureClass.UNAVAILABLE, "SMTPServerDisconnected") == (
        failure.failure_class,
        failure.code,
    )


async def test_a_server_that_stalls_after_data_is_indeterminate(
    clock: FixedClock, server: SmtpStandIn, behaviour: Behaviour
) -> None:
    behaviour.stall_data = TIMEOUT * 6

    failure = (await _refusal(_provider(clock, server.port))).failure

    assert (FailureClass.INDETERMINATE, "SMTPReadTimeoutError") == (
        failure.failure_class,
        failure.code,
    )


async def test_a_disconnect_after_data_is_indeterminate(
    clock: FixedClock, server: SmtpStandIn, behaviour: Behaviour
) -> None:
    behaviour.drop_at = "data"

    failure = (await _refusal(_provider(clock, server.port))).failure

    assert (FailureClass.INDETERMINATE, "SMTPServerDisconnected") == (
        failure.failure_class,
        failure.code,
    )


@pytest.mark.parametrize(
    ("step", "reply"),
    [
        ("rcpt_reply", f"550 5.1.1 <{EMAIL}>: Recipient address rejected"),
        ("data_reply", f"554 5.7.1 Spam: 'Your code is {CODE}'"),
        ("mail_reply", f"451 4.7.1 {EMAIL} try later"),
    ],
)
async def test_failures_never_show_the_destination_or_the_text(
    clock: FixedClock, server: SmtpStandIn, behaviour: Behaviour, step: str, reply: str
) -> None:
    setattr(behaviour, step, reply)

    failed = await _refusal(_provider(clock, server.port))

    assert [] == leaks(failed, EMAIL, CODE)


async def test_a_message_that_cannot_be_built_is_rejected_without_connecting(
    clock: FixedClock, refused_port: int
) -> None:
    delivery = email_delivery()
    broken = attrs.evolve(
        delivery, content=attrs.evolve(delivery.content, subject="Hi\nBcc: eve@example.com")
    )

    with pytest.raises(DeliveryFailed) as raised:
        await _provider(clock, refused_port).send(broken)

    assert (FailureClass.REJECTED, "invalid_message") == (
        raised.value.failure.failure_class,
        raised.value.failure.code,
    )


@pytest.mark.parametrize(
    ("step", "exchange"),
    [
        (
            "rcpt_reply",
            (
                f"550 5.1.1 <{EMAIL}>: Recipient address rejected: User unknown",
                "5.1.1 [address]: Recipient address rejected: User unknown",
            ),
        ),
        (
            "data_reply",
            (
                f"554 5.7.1 Spam: 'Your code is {CODE}' from 192.0.2.7",
                "5.7.1 Spam: 'Your code is [number]' from [ip]",
            ),
        ),
        ("mail_reply", ("451 4.7.1 alice.liddell try later", "4.7.1 [address] try later")),
        ("mail_reply", ("421 Too busy", "Too busy")),
    ],
)
async def test_a_reply_keeps_its_enhanced_code_and_reason_without_addresses_or_secrets(
    clock: FixedClock,
    server: SmtpStandIn,
    behaviour: Behaviour,
    step: str,
    exchange: tuple[str, str],
) -> None:
    """``exchange``: what the server answers, and the detail kept of it."""
    reply, detail = exchange
    setattr(behaviour, step, reply)

    failure = (await _refusal(_provider(clock, server.port))).failure

    assert (reply[:3], detail) == (failure.code, failure.detail)
