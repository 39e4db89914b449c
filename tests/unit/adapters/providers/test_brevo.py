"""Brevo's request shapes and refusal readings, through httpx.MockTransport."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest

from adapters.providers.brevo.provider import BrevoProvider
from application.outbox.errors import DeliveryFailed
from application.outbox.ports import Delivery, RenderedMessage
from domain.channels import Channel
from domain.outbox.failures import FailureClass
from tests.fakes.clock import FixedClock
from tests.fakes.deliveries import MESSAGE_ID, PHONE, email_delivery, phone_delivery

Handler = Callable[[httpx.Request], httpx.Response]


def _provider(handler: Handler, *, sms_sender: str | None = "Example") -> BrevoProvider:
    return BrevoProvider(
        api_key="xkeysib-test",
        clock=FixedClock(),
        timeout=1,
        sender_email="no-reply@example.org",
        sms_sender=sms_sender,
        transport=httpx.MockTransport(handler),
    )


async def _failure(provider: BrevoProvider, delivery: Delivery) -> tuple[FailureClass, str]:
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
    provider = _provider(handler)
    assert "7" == await provider.send(delivery)
    await provider.aclose()

    assert seen[0]["unicodeEnabled"] is True


async def test_an_accepted_email_without_a_json_body_returns_an_empty_id() -> None:
    provider = _provider(lambda _request: httpx.Response(201, content=b""))

    assert "" == await provider.send(email_delivery())
    await provider.aclose()


async def test_a_replayed_idempotency_key_counts_as_accepted_for_email_only() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, json={"code": "duplicate_parameter", "message": "…"})

    provider = _provider(handler)
    assert "" == await provider.send(email_delivery())

    assert (FailureClass.REJECTED, "400:duplicate_parameter") == await _failure(
        provider, phone_delivery(Channel.SMS)
    )


async def test_a_channel_without_a_configured_sender_is_rejected_without_a_request() -> None:
    requests: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return httpx.Response(201, json={})

    failure = await _failure(_provider(handler, sms_sender=None), phone_delivery(Channel.SMS))

    assert (FailureClass.REJECTED, "channel_not_configured") == failure
    assert [] == requests


async def test_a_whatsapp_delivery_is_not_brevos_to_send() -> None:
    failure = await _failure(
        _provider(lambda _request: httpx.Response(201)), phone_delivery(Channel.WHATSAPP)
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
    assert expected == await _failure(_provider(lambda _request: response), email_delivery())


async def test_connection_errors_raised_by_the_transport_are_classified() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    failure = await _failure(_provider(handler), email_delivery())

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
    provider = _provider(lambda _: httpx.Response(status, json=body))

    failure_class, code = await _failure(provider, phone_delivery(Channel.SMS))

    assert FailureClass.REJECTED is failure_class
    assert f"{status}:fraud" == code
