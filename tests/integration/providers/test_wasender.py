"""WasenderAPI against a local HTTP server that answers like its send-message endpoint, and its
refusal readings through httpx.MockTransport."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import timedelta

import httpx
import pytest

from outbox.adapters.providers.wasender.provider import WasenderProvider
from outbox.application.delivery.errors import DeliveryFailed
from outbox.domain.channels import Channel
from outbox.domain.delivery.failures import DeliveryFailure, FailureClass
from tests.fakes.clock import EPOCH, FixedClock
from tests.fakes.deliveries import CODE, PHONE, leaks, phone_delivery
from tests.integration.providers.http_stand_in import HttpStandIn, Reply
from tests.integration.providers.impersonations import WASENDER_KEY, Wasender

TIMEOUT = 0.5
TRIAL_LIMIT = {
    "message": "You are on a free trial. You can only send 1 message every 1 minute.",
    "retry_after": 60,
}


@pytest.fixture
def wasender() -> Wasender:
    """WasenderAPI's behaviour, with a connected session."""
    return Wasender()


@pytest.fixture
def server(wasender: Wasender) -> Iterator[HttpStandIn]:
    """A local HTTP server playing WasenderAPI."""
    stand_in = HttpStandIn(wasender)
    stand_in.start()
    yield stand_in
    stand_in.stop()


def _provider(clock: FixedClock, base_url: str, api_key: str = WASENDER_KEY) -> WasenderProvider:
    return WasenderProvider(api_key=api_key, clock=clock, timeout=TIMEOUT, base_url=base_url)


@pytest.fixture
async def provider(clock: FixedClock, server: HttpStandIn) -> AsyncIterator[WasenderProvider]:
    """A Wasender provider pointed at the local server."""
    wasender_provider = _provider(clock, f"{server.url}/api")
    yield wasender_provider
    await wasender_provider.aclose()


async def _refusal(provider: WasenderProvider) -> DeliveryFailed:
    with pytest.raises(DeliveryFailed) as raised:
        await provider.send(phone_delivery(Channel.WHATSAPP))
    return raised.value


async def test_text_is_posted_to_send_message_with_the_bearer_session_key(
    provider: WasenderProvider, server: HttpStandIn
) -> None:
    provider_id = await provider.send(phone_delivery(Channel.WHATSAPP))

    assert "100001" == provider_id
    [request] = server.received
    assert ("POST", "/api/send-message") == (request.method, request.path)
    assert f"Bearer {WASENDER_KEY}" == request.headers["authorization"]
    assert {"to": PHONE, "text": f"Your code is {CODE}"} == request.body


@pytest.mark.parametrize("state", ["logged_out", "need_scan", "expired", "disconnected"])
async def test_a_session_that_is_down_suspends_the_provider(
    provider: WasenderProvider, wasender: Wasender, state: str
) -> None:
    wasender.session = state

    failure = (await _refusal(provider)).failure

    assert (FailureClass.PROVIDER_SUSPENDED, "400:session") == (failure.failure_class, failure.code)


async def test_a_refused_session_key_suspends_the_provider(
    clock: FixedClock, server: HttpStandIn
) -> None:
    provider = _provider(clock, f"{server.url}/api", api_key="wsk_revoked")
    try:
        failure = (await _refusal(provider)).failure
    finally:
        await provider.aclose()

    assert (FailureClass.PROVIDER_SUSPENDED, "401") == (failure.failure_class, failure.code)


async def test_429_is_throttled_for_the_retry_after_the_body_gives(
    provider: WasenderProvider, server: HttpStandIn, clock: FixedClock
) -> None:
    server.then(Reply(status=429, body=TRIAL_LIMIT))

    failure = (await _refusal(provider)).failure

    assert (FailureClass.THROTTLED, "429", clock.now() + timedelta(seconds=60)) == (
        failure.failure_class,
        failure.code,
        failure.retry_after,
    )


async def test_429_prefers_the_retry_after_header(
    provider: WasenderProvider, server: HttpStandIn, clock: FixedClock
) -> None:
    server.then(Reply(status=429, body=TRIAL_LIMIT, headers={"Retry-After": "5"}))

    failure = (await _refusal(provider)).failure

    assert clock.now() + timedelta(seconds=5) == failure.retry_after


async def test_429_falls_back_on_the_rate_limit_reset_timestamp(
    provider: WasenderProvider, server: HttpStandIn, clock: FixedClock
) -> None:
    reset = int((clock.now() + timedelta(seconds=20)).timestamp())
    server.then(
        Reply(
            status=429,
            body={"message": "Too Many Attempts."},
            headers={"X-RateLimit-Reset": str(reset)},
        )
    )

    failure = (await _refusal(provider)).failure

    assert clock.now() + timedelta(seconds=20) == failure.retry_after


@pytest.mark.parametrize(
    ("reply", "failure_class", "code"),
    [
        pytest.param(
            Reply(
                status=422,
                body={
                    "success": False,
                    "message": "Validation failed",
                    "errors": {"to": ["The to field must be a valid phone number."]},
                },
            ),
            FailureClass.REJECTED,
            "422",
            id="validation",
        ),
        pytest.param(
            Reply(status=500, body={"message": "Server Error"}),
            FailureClass.UNAVAILABLE,
            "500",
            id="500",
        ),
        pytest.param(
            Reply(status=502, body=b"Bad Gateway"), FailureClass.UNAVAILABLE, "502", id="502"
        ),
        pytest.param(Reply(status=408, body={}), FailureClass.UNAVAILABLE, "408", id="408"),
        pytest.param(
            Reply(status=200, body={"success": False, "message": "Could not send"}),
            FailureClass.REJECTED,
            "200:not_sent",
            id="success-false",
        ),
    ],
)
async def test_refusals_are_classified(
    provider: WasenderProvider,
    server: HttpStandIn,
    reply: Reply,
    failure_class: FailureClass,
    code: str,
) -> None:
    server.then(reply)

    failure = (await _refusal(provider)).failure

    assert (failure_class, code) == (failure.failure_class, failure.code)


async def test_a_response_that_never_comes_is_indeterminate(
    provider: WasenderProvider, server: HttpStandIn
) -> None:
    server.then(Reply(status=200, body={"success": True}, delay=TIMEOUT * 4))

    failure = (await _refusal(provider)).failure

    assert (FailureClass.INDETERMINATE, "ReadTimeout") == (failure.failure_class, failure.code)


async def test_a_refused_connection_is_unavailable(clock: FixedClock, refused_port: int) -> None:
    provider = _provider(clock, f"http://127.0.0.1:{refused_port}/api")
    try:
        failure = (await _refusal(provider)).failure
    finally:
        await provider.aclose()

    assert (FailureClass.UNAVAILABLE, "ConnectError") == (failure.failure_class, failure.code)


@pytest.mark.parametrize(
    "reply",
    [
        Reply(
            status=422, body={"message": f"{PHONE} is not on WhatsApp", "errors": {"to": [PHONE]}}
        ),
        Reply(status=401, body={"message": f"Invalid token {WASENDER_KEY}"}),
        Reply(status=429, body={"message": CODE, "retry_after": 60}),
        Reply(status=400, body={"message": "session logged out", "data": {"status": CODE}}),
    ],
)
async def test_failures_never_show_the_destination_the_text_or_the_key(
    provider: WasenderProvider, server: HttpStandIn, reply: Reply
) -> None:
    server.then(reply)

    failed = await _refusal(provider)

    assert [] == leaks(failed, PHONE, PHONE.removeprefix("+"), CODE, WASENDER_KEY)


# Request shapes and refusal readings through httpx.MockTransport, where no stand-in
# server is needed to see them.


async def _mocked_outcome(response: httpx.Response) -> str | DeliveryFailure:
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
    assert "" == await _mocked_outcome(httpx.Response(200, json={"success": True}))


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
        outcome = await _mocked_outcome(httpx.Response(status, json=body))

        assert isinstance(outcome, DeliveryFailure)
        assert (FailureClass.PROVIDER_SUSPENDED, f"{status}:session") == (
            outcome.failure_class,
            outcome.code,
        )


async def test_a_rate_limit_that_mentions_the_session_stays_throttled() -> None:
    outcome = await _mocked_outcome(
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
    outcome = await _mocked_outcome(httpx.Response(429, json={"retry_after": 10**9}))

    assert DeliveryFailure(failure_class=FailureClass.THROTTLED, code="429") == outcome


async def test_a_plain_validation_error_is_rejected() -> None:
    outcome = await _mocked_outcome(
        httpx.Response(422, json={"message": "Validation failed", "errors": {"to": ["bad"]}})
    )

    assert DeliveryFailure(failure_class=FailureClass.REJECTED, code="422") == outcome
