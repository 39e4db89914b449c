"""Brevo against a local HTTP server that answers like Brevo's v3 API, and its request shapes
and refusal readings through httpx.MockTransport."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import timedelta

import attrs
import httpx
import pytest

from outbox.adapters.providers.brevo.provider import BrevoProvider
from outbox.application.delivery.errors import DeliveryFailed
from outbox.application.delivery.ports import Delivery, RenderedMessage
from outbox.domain.channels import Channel
from outbox.domain.delivery.failures import FailureClass
from tests.fakes.clock import FixedClock
from tests.fakes.deliveries import (
    CODE,
    EMAIL,
    MESSAGE_ID,
    PHONE,
    email_delivery,
    leaks,
)
from tests.fakes.deliveries import phone_delivery as phone
from tests.integration.providers.http_stand_in import HttpStandIn, Received, Reply
from tests.integration.providers.impersonations import BREVO_KEY, Brevo

TIMEOUT = 0.5


@pytest.fixture
def brevo() -> Brevo:
    """Brevo's behaviour, with its memory of idempotency keys."""
    return Brevo()


@pytest.fixture
def server(brevo: Brevo) -> Iterator[HttpStandIn]:
    """A local HTTP server playing Brevo."""
    stand_in = HttpStandIn(brevo)
    stand_in.start()
    yield stand_in
    stand_in.stop()


def _provider(clock: FixedClock, base_url: str, api_key: str = BREVO_KEY) -> BrevoProvider:
    return BrevoProvider(
        api_key=api_key,
        clock=clock,
        timeout=TIMEOUT,
        sender_email="no-reply@example.org",
        sender_name="Example",
        sms_sender="Example",
        base_url=base_url,
    )


@pytest.fixture
async def provider(clock: FixedClock, server: HttpStandIn) -> AsyncIterator[BrevoProvider]:
    """A Brevo provider pointed at the local server."""
    brevo_provider = _provider(clock, f"{server.url}/v3")
    yield brevo_provider
    await brevo_provider.aclose()


async def _refusal(provider: BrevoProvider, channel: Channel = Channel.EMAIL) -> DeliveryFailed:
    delivery = email_delivery() if channel is Channel.EMAIL else phone(channel)
    with pytest.raises(DeliveryFailed) as raised:
        await provider.send(delivery)
    return raised.value


async def test_email_is_posted_with_api_key_both_parts_and_the_message_id_as_idempotency_key(
    provider: BrevoProvider, server: HttpStandIn
) -> None:
    provider_id = await provider.send(email_delivery())

    assert "<20260101.1@smtp-relay.mailin.fr>" == provider_id
    [request] = server.received
    assert ("POST", "/v3/smtp/email") == (request.method, request.path)
    assert BREVO_KEY == request.headers["api-key"]
    assert {
        "sender": {"email": "no-reply@example.org", "name": "Example"},
        "to": [{"email": EMAIL}],
        "subject": "Your verification code",
        "textContent": f"Your code is {CODE}. It expires in 10 minutes.",
        "htmlContent": f"<p>Your code is <strong>{CODE}</strong>.</p>",
        "headers": {"idempotencyKey": str(MESSAGE_ID)},
    } == request.body


async def test_email_without_html_sends_the_text_part_only(
    provider: BrevoProvider, server: HttpStandIn
) -> None:
    await provider.send(email_delivery(html=False))

    assert "htmlContent" not in server.received[0].body


async def test_sms_is_posted_with_sender_recipient_and_the_message_id_as_tag(
    provider: BrevoProvider, server: HttpStandIn
) -> None:
    provider_id = await provider.send(phone(Channel.SMS))

    assert "1511882900176221" == provider_id
    [request] = server.received
    assert "/v3/transactionalSMS/send" == request.path
    assert {
        "type": "transactional",
        "sender": "Example",
        "recipient": PHONE.removeprefix("+"),
        "content": f"Your code is {CODE}",
        "tag": str(MESSAGE_ID),
        "unicodeEnabled": False,
    } == request.body


async def test_a_retry_after_a_lost_response_does_not_mail_twice(
    clock: FixedClock, brevo: Brevo
) -> None:
    """The first response is lost after Brevo took the email; the retry's key is a replay."""
    lost = [True]

    def lose_first_response(request: Received) -> Reply:
        reply = brevo(request)
        if lost:
            lost.pop()
            return attrs.evolve(reply, hang_up=True)
        return reply

    server = HttpStandIn(lose_first_response)
    server.start()
    provider = _provider(clock, f"{server.url}/v3")
    try:
        with pytest.raises(DeliveryFailed) as first:
            await provider.send(email_delivery())
        retried = await provider.send(email_delivery())
    finally:
        await provider.aclose()
        server.stop()

    assert FailureClass.INDETERMINATE == first.value.failure.failure_class
    assert "" == retried
    assert 1 == brevo.sent
    assert 2 == len(server.received)


async def test_a_revoked_api_key_suspends_the_provider(
    clock: FixedClock, server: HttpStandIn
) -> None:
    provider = _provider(clock, f"{server.url}/v3", api_key="xkeysib-revoked")
    try:
        failure = (await _refusal(provider)).failure
    finally:
        await provider.aclose()

    assert (FailureClass.PROVIDER_SUSPENDED, "401:unauthorized") == (
        failure.failure_class,
        failure.code,
    )


@pytest.mark.parametrize(
    ("reply", "channel", "failure_class", "code"),
    [
        pytest.param(
            Reply(status=402, body={"code": "not_enough_credits", "message": "Not enough credits"}),
            Channel.SMS,
            FailureClass.PROVIDER_SUSPENDED,
            "402:not_enough_credits",
            id="out-of-credits",
        ),
        pytest.param(
            Reply(status=403, body={"code": "permission_denied", "message": "IP not allowed"}),
            Channel.EMAIL,
            FailureClass.PROVIDER_SUSPENDED,
            "403:permission_denied",
            id="permission-denied",
        ),
        pytest.param(
            Reply(status=400, body={"code": "account_under_validation", "message": "…"}),
            Channel.EMAIL,
            FailureClass.PROVIDER_SUSPENDED,
            "400:account_under_validation",
            id="account-under-validation",
        ),
        pytest.param(
            Reply(status=400, body={"code": "invalid_parameter", "message": "email is not valid"}),
            Channel.EMAIL,
            FailureClass.REJECTED,
            "400:invalid_parameter",
            id="invalid-parameter",
        ),
        pytest.param(
            Reply(status=404, body={"code": "document_not_found", "message": "…"}),
            Channel.SMS,
            FailureClass.REJECTED,
            "404:document_not_found",
            id="other-4xx",
        ),
        pytest.param(
            Reply(status=408, body={}), Channel.EMAIL, FailureClass.UNAVAILABLE, "408", id="408"
        ),
        pytest.param(
            Reply(status=500, body={"code": "internal_error", "message": "…"}),
            Channel.EMAIL,
            FailureClass.UNAVAILABLE,
            "500:internal_error",
            id="500",
        ),
        pytest.param(
            Reply(status=503, body=b"<html>Service Unavailable</html>"),
            Channel.SMS,
            FailureClass.UNAVAILABLE,
            "503",
            id="503-html",
        ),
    ],
)
async def test_refusals_are_classified(
    *,
    provider: BrevoProvider,
    server: HttpStandIn,
    reply: Reply,
    channel: Channel,
    failure_class: FailureClass,
    code: str,
) -> None:
    server.then(reply)

    failure = (await _refusal(provider, channel)).failure

    assert (failure_class, code, None) == (failure.failure_class, failure.code, failure.retry_after)


async def test_429_is_throttled_until_retry_after(
    provider: BrevoProvider, server: HttpStandIn, clock: FixedClock
) -> None:
    server.then(
        Reply(
            status=429,
            body={"code": "too_many_requests", "message": "…"},
            headers={"Retry-After": "30", "x-sib-ratelimit-reset": "45"},
        )
    )

    failure = (await _refusal(provider)).failure

    assert FailureClass.THROTTLED == failure.failure_class
    assert clock.now() + timedelta(seconds=30) == failure.retry_after


async def test_429_without_retry_after_uses_brevos_reset_header(
    provider: BrevoProvider, server: HttpStandIn, clock: FixedClock
) -> None:
    server.then(Reply(status=429, body={}, headers={"x-sib-ratelimit-reset": "45"}))

    failure = (await _refusal(provider, Channel.SMS)).failure

    assert (FailureClass.THROTTLED, clock.now() + timedelta(seconds=45)) == (
        failure.failure_class,
        failure.retry_after,
    )


async def test_a_response_that_never_comes_is_indeterminate(
    provider: BrevoProvider, server: HttpStandIn
) -> None:
    server.then(Reply(status=201, body={"messageId": "late"}, delay=TIMEOUT * 4))

    failure = (await _refusal(provider)).failure

    assert (FailureClass.INDETERMINATE, "ReadTimeout") == (failure.failure_class, failure.code)


async def test_a_connection_closed_without_a_response_is_indeterminate(
    provider: BrevoProvider, server: HttpStandIn
) -> None:
    server.then(Reply(hang_up=True))

    failure = (await _refusal(provider)).failure

    assert (FailureClass.INDETERMINATE, "RemoteProtocolError") == (
        failure.failure_class,
        failure.code,
    )


async def test_a_refused_connection_is_unavailable(clock: FixedClock, refused_port: int) -> None:
    provider = _provider(clock, f"http://127.0.0.1:{refused_port}/v3")
    try:
        failure = (await _refusal(provider)).failure
    finally:
        await provider.aclose()

    assert (FailureClass.UNAVAILABLE, "ConnectError") == (failure.failure_class, failure.code)


async def test_a_connect_timeout_is_unavailable(clock: FixedClock, unreachable_port: int) -> None:
    provider = _provider(clock, f"http://127.0.0.1:{unreachable_port}/v3")
    try:
        failure = (await _refusal(provider)).failure
    finally:
        await provider.aclose()

    assert (FailureClass.UNAVAILABLE, "ConnectTimeout") == (failure.failure_class, failure.code)


@pytest.mark.parametrize(
    "reply",
    [
        Reply(status=400, body={"code": "invalid_parameter", "message": f"{EMAIL} {CODE}"}),
        Reply(status=401, body={"code": "unauthorized", "message": f"Key {BREVO_KEY} revoked"}),
        Reply(status=429, body={"code": "x", "message": PHONE}, headers={"Retry-After": "5"}),
        Reply(status=502, body={"code": f"{CODE}", "message": EMAIL}),
        Reply(hang_up=True),
    ],
)
async def test_failures_never_show_the_destination_the_text_or_the_key(
    provider: BrevoProvider, server: HttpStandIn, reply: Reply
) -> None:
    server.then(reply, reply)

    email_failed = await _refusal(provider)
    sms_failed = await _refusal(provider, Channel.SMS)

    assert [] == leaks(email_failed, EMAIL, CODE, BREVO_KEY, "Your code")
    assert [] == leaks(sms_failed, PHONE, PHONE.removeprefix("+"), CODE, BREVO_KEY)


# Request shapes and refusal readings through httpx.MockTransport, where no stand-in
# server is needed to see them.


Handler = Callable[[httpx.Request], httpx.Response]


def _mocked_provider(handler: Handler, *, sms_sender: str | None = "Example") -> BrevoProvider:
    return BrevoProvider(
        api_key="xkeysib-test",
        clock=FixedClock(),
        timeout=1,
        sender_email="no-reply@example.org",
        sms_sender=sms_sender,
        transport=httpx.MockTransport(handler),
    )


async def _mocked_failure(provider: BrevoProvider, delivery: Delivery) -> tuple[FailureClass, str]:
    with pytest.raises(DeliveryFailed) as raised:
        await provider.send(delivery)
    await provider.aclose()
    return raised.value.failure.failure_class, raised.value.failure.code


async def test_non_ascii_sms_asks_for_unicode() -> None:
    seen: list[dict[str, object]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(201, json={"messageId": 7})

    delivery = Delivery(
        message_id=MESSAGE_ID,
        channel=Channel.SMS,
        destination=PHONE,
        content=RenderedMessage(subject="", text="Código: 493817"),
    )
    provider = _mocked_provider(handler)
    assert "7" == await provider.send(delivery)
    await provider.aclose()

    assert seen[0]["unicodeEnabled"] is True


async def test_an_accepted_email_without_a_json_body_returns_an_empty_id() -> None:
    provider = _mocked_provider(lambda _request: httpx.Response(201, content=b""))

    assert "" == await provider.send(email_delivery())
    await provider.aclose()


async def test_a_replayed_idempotency_key_counts_as_accepted_for_email_only() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, json={"code": "duplicate_parameter", "message": "…"})

    provider = _mocked_provider(handler)
    assert "" == await provider.send(email_delivery())

    assert (FailureClass.REJECTED, "400:duplicate_parameter") == await _mocked_failure(
        provider, phone(Channel.SMS)
    )


async def test_a_channel_without_a_configured_sender_is_rejected_without_a_request() -> None:
    requests: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return httpx.Response(201, json={})

    failure = await _mocked_failure(_mocked_provider(handler, sms_sender=None), phone(Channel.SMS))

    assert (FailureClass.REJECTED, "channel_not_configured") == failure
    assert [] == requests


async def test_a_whatsapp_delivery_is_not_brevos_to_send() -> None:
    failure = await _mocked_failure(
        _mocked_provider(lambda _request: httpx.Response(201)), phone(Channel.WHATSAPP)
    )

    assert (FailureClass.REJECTED, "channel_not_configured") == failure


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (httpx.Response(401, text="Unauthorized"), (FailureClass.PROVIDER_SUSPENDED, "401")),
        (httpx.Response(402, json={}), (FailureClass.PROVIDER_SUSPENDED, "402")),
        (
            httpx.Response(400, json={"code": "not_enough_credits"}),
            (FailureClass.PROVIDER_SUSPENDED, "400:not_enough_credits"),
        ),
        (
            httpx.Response(400, json={"code": "Invalid phone 34612345678"}),
            (FailureClass.REJECTED, "400"),
        ),
        (httpx.Response(429, json={}), (FailureClass.THROTTLED, "429")),
        (httpx.Response(502, text="bad gateway"), (FailureClass.UNAVAILABLE, "502")),
    ],
)
async def test_refusals_are_read_from_status_and_brevo_code(
    response: httpx.Response, expected: tuple[FailureClass, str]
) -> None:
    assert expected == await _mocked_failure(
        _mocked_provider(lambda _request: response), email_delivery()
    )


async def test_connection_errors_raised_by_the_transport_are_classified() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    failure = await _mocked_failure(_mocked_provider(handler), email_delivery())

    assert (FailureClass.UNAVAILABLE, "ConnectError") == failure


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (403, {"code": "permission_denied", "message": "SMS blocked: suspected fraud"}),
        (400, {"code": "invalid_parameter", "message": "Recipient number is blacklisted"}),
        (402, {"code": "not_enough_credits", "message": "Sending paused for SMS pumping"}),
    ],
)
async def test_a_fraud_block_of_an_sms_is_rejected_never_retried_or_paused(
    status: int, body: dict[str, str]
) -> None:
    """Read as an account problem, a fraud answer would pause the provider and be retried."""
    provider = _mocked_provider(lambda _: httpx.Response(status, json=body))

    failure_class, code = await _mocked_failure(provider, phone(Channel.SMS))

    assert FailureClass.REJECTED is failure_class
    assert f"{status}:fraud" == code
