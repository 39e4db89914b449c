"""WhatsApp text messages through WasenderAPI (POST /api/send-message, bearer session key)."""

from __future__ import annotations

from collections.abc import Mapping

import httpx

from outbox.adapters.providers.http_failures import (
    failure_for_status,
    failure_for_transport_error,
    json_object,
    parse_delay,
    parse_rate_limit_reset,
    provider_message_id,
)
from outbox.application.delivery.errors import DeliveryFailed
from outbox.application.delivery.ports import Delivery
from outbox.application.ports import Clock
from outbox.domain.delivery.failures import DeliveryFailure, FailureClass

DEFAULT_BASE_URL = "https://www.wasenderapi.com/api"
SEND_PATH = "/send-message"

# The session states WasenderAPI documents for a session that cannot send until an
# operator reconnects it (GET /api/status, the session.status webhook).
SESSION_DOWN_STATES = frozenset({"disconnected", "need_scan", "logged_out", "expired", "banned"})
# How a send-message refusal words the same situation when it carries no status field.
_SESSION_DOWN_WORDS = (
    "not connected",
    "disconnected",
    "logged out",
    "need_scan",
    "scan the qr",
    "session expired",
    "banned",
)


class WasenderProvider:
    """One WasenderAPI WhatsApp session, authenticated by its session API key.

    Failures: 429 THROTTLED (``Retry-After``, else the body's ``retry_after`` seconds,
    else ``X-RateLimit-Reset``); 401/403, and any refusal that reports the session as
    disconnected, logged out, expired, waiting for a QR scan or banned,
    PROVIDER_SUSPENDED; 408 and 5xx UNAVAILABLE; other 4xx REJECTED; connection failures
    before the request UNAVAILABLE; timeouts after it INDETERMINATE. WasenderAPI takes
    no idempotency key.
    """

    def __init__(
        self,
        *,
        api_key: str,
        clock: Clock,
        timeout: float,
        base_url: str = DEFAULT_BASE_URL,
        max_connections: int = 32,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._clock = clock
        self._client = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            headers={"authorization": f"Bearer {api_key}", "accept": "application/json"},
            timeout=httpx.Timeout(timeout),
            limits=httpx.Limits(max_connections=max_connections),
            transport=transport,
        )

    @property
    def name(self) -> str:
        """``wasender``."""
        return "wasender"

    async def send(self, delivery: Delivery) -> str:
        """Send the text part to the E.164 destination; return WasenderAPI's ``msgId``.

        Raises DeliveryFailed with the HTTP status (``:session`` for a session that is
        down) as code.
        """
        payload = {"to": delivery.destination, "text": delivery.content.text}
        try:
            response = await self._client.post(SEND_PATH, json=payload)
        except httpx.TransportError as error:
            raise DeliveryFailed(failure_for_transport_error(error)) from None
        body = json_object(response)
        if response.is_success and body.get("success") is not False:
            data = body.get("data")
            return provider_message_id(data.get("msgId") if isinstance(data, Mapping) else None)
        raise DeliveryFailed(self._classify(response, body))

    async def aclose(self) -> None:
        """Close the HTTP client and its connections."""
        await self._client.aclose()

    def _classify(self, response: httpx.Response, body: Mapping[str, object]) -> DeliveryFailure:
        status = response.status_code
        if status != 429 and _session_down(body):
            return DeliveryFailure(
                failure_class=FailureClass.PROVIDER_SUSPENDED, code=f"{status}:session"
            )
        if response.is_success:  # 2xx with "success": false and no reason we know
            return DeliveryFailure(failure_class=FailureClass.REJECTED, code=f"{status}:not_sent")
        now = self._clock.now()
        retry_after = (
            parse_delay(response.headers.get("retry-after"), now)
            or parse_delay(body.get("retry_after", body.get("retryAfter")), now)
            or parse_rate_limit_reset(response.headers.get("x-ratelimit-reset"), now)
        )
        return failure_for_status(status, retry_after=retry_after)


def _session_down(body: Mapping[str, object]) -> bool:
    data = body.get("data")
    states = [body.get("status"), data.get("status") if isinstance(data, Mapping) else None]
    if any(isinstance(state, str) and state.lower() in SESSION_DOWN_STATES for state in states):
        return True
    message = body.get("message")
    return isinstance(message, str) and any(word in message.lower() for word in _SESSION_DOWN_WORDS)
