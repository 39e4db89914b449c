"""WasenderAPI's refusal readings, through httpx.MockTransport."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest

from adapters.providers.wasender.provider import WasenderProvider
from application.outbox.errors import DeliveryFailed
from domain.channels import Channel
from domain.outbox.failures import DeliveryFailure, FailureClass
from tests.fakes.clock import EPOCH, FixedClock
from tests.fakes.deliveries import phone_delivery


async def _outcome(response: httpx.Response) -> str | DeliveryFailure:
    provider = WasenderProvider(
        api_key="wsk-test",
        clock=FixedClock(),
        timeout=1,
        transport=httpx.MockTransport(lambda _request: response),
    )
    try:
        return await provider.send(phone_delivery(Channel.WHATSAPP))
    except DeliveryFailed as failed:
        return failed.failure
    finally:
        await provider.aclose()


async def test_an_accepted_message_without_data_returns_an_empty_id() -> None:
    assert "" == await _outcome(httpx.Response(200, json={"success": True}))


@pytest.mark.parametrize(
    "body",
    [
        {"success": False, "message": "Your WhatsApp session is not connected."},
        {"success": False, "message": "Session logged out, scan the QR code again"},
        {"success": False, "message": "This number is banned"},
        {"success": False, "status": "need_scan"},
        {"success": False, "data": {"status": "EXPIRED"}},
    ],
)
async def test_a_session_reported_down_in_any_refusal_suspends_the_provider(
    body: dict[str, object],
) -> None:
    for status in (400, 409, 422, 200):
        outcome = await _outcome(httpx.Response(status, json=body))

        assert isinstance(outcome, DeliveryFailure)
        assert (FailureClass.PROVIDER_SUSPENDED, f"{status}:session") == (
            outcome.failure_class,
            outcome.code,
        )


async def test_a_rate_limit_that_mentions_the_session_stays_throttled() -> None:
    outcome = await _outcome(
        httpx.Response(429, json={"message": "session disconnected too often", "retryAfter": 12})
    )

    assert (
        DeliveryFailure(
            failure_class=FailureClass.THROTTLED,
            code="429",
            retry_after=EPOCH + timedelta(seconds=12),
        )
        == outcome
    )


async def test_an_absurd_retry_hint_falls_back_to_the_schedule() -> None:
    outcome = await _outcome(httpx.Response(429, json={"retry_after": 10**9}))

    assert DeliveryFailure(failure_class=FailureClass.THROTTLED, code="429") == outcome


async def test_a_plain_validation_error_is_rejected() -> None:
    outcome = await _outcome(
        httpx.Response(422, json={"message": "Validation failed", "errors": {"to": ["bad"]}})
    )

    assert DeliveryFailure(failure_class=FailureClass.REJECTED, code="422") == outcome
