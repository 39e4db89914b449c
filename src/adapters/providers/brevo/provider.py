"""Brevo transactional email (POST /v3/smtp/email) and SMS (POST /v3/transactionalSMS/send)."""

from __future__ import annotations

from collections.abc import Mapping

import httpx

from outbox.adapters.providers.http_failures import (
    failure_for_status,
    failure_for_transport_error,
    json_object,
    names_fraud_block,
    parse_delay,
    provider_message_id,
    safe_token,
)
from outbox.application.delivery.errors import DeliveryFailed
from outbox.application.delivery.ports import Delivery
from outbox.application.ports import Clock
from outbox.domain.channels import Channel
from outbox.domain.delivery.failures import DeliveryFailure, FailureClass

DEFAULT_BASE_URL = "https://api.brevo.com/v3"
EMAIL_PATH = "/smtp/email"
SMS_PATH = "/transactionalSMS/send"

# Brevo error codes (the ``code`` field of an error body) that hold for the whole account.
ACCOUNT_CODES = frozenset(
    {
        "not_enough_credits",
        "account_under_validation",
        "unauthorized",
        "permission_denied",
        "reseller_permission_denied",
    }
)
# What Brevo answers to a repeated ``idempotencyKey`` within its TTL: the first request
# with that key was processed, so the message is already on its way.
IDEMPOTENT_REPLAY = "duplicate_parameter"


class BrevoProvider:
    """One Brevo account: email and SMS over one HTTP client, authenticated by ``api-key``.

    Failures: 429 THROTTLED (``Retry-After``, else ``x-sib-ratelimit-reset`` seconds);
    401, 402, 403 and account-wide error codes (out of credits, key revoked, account
    under validation) PROVIDER_SUSPENDED; 408 and 5xx UNAVAILABLE; other 4xx REJECTED;
    connection failures before the request UNAVAILABLE; read timeouts and broken
    responses after it INDETERMINATE. Email carries the message id as Brevo's
    idempotency key, so retrying an INDETERMINATE send cannot mail twice; the SMS API
    takes no such key, so the message id goes in its ``tag`` for tracing.
    """

    def __init__(
        self,
        *,
        api_key: str,
        clock: Clock,
        timeout: float,
        sender_email: str | None = None,
        sender_name: str | None = None,
        sms_sender: str | None = None,
        base_url: str = DEFAULT_BASE_URL,
        max_connections: int = 32,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._clock = clock
        self._sender: dict[str, str] | None = None
        if sender_email is not None:
            self._sender = {"email": sender_email}
            if sender_name:
                self._sender["name"] = sender_name
        self._sms_sender = sms_sender
        self._client = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            headers={"api-key": api_key, "accept": "application/json"},
            timeout=httpx.Timeout(timeout),
            limits=httpx.Limits(max_connections=max_connections),
            transport=transport,
        )

    @property
    def name(self) -> str:
        """``brevo``."""
        return "brevo"

    async def send(self, delivery: Delivery) -> str:
        """Send an email or an SMS; return Brevo's message id ("" for an idempotent replay).

        Raises DeliveryFailed with the HTTP status (and Brevo's error code) as code.
        """
        path, payload = self._request(delivery)
        try:
            response = await self._client.post(path, json=payload)
        except httpx.TransportError as error:
            raise DeliveryFailed(failure_for_transport_error(error)) from None
        body = json_object(response)
        if response.is_success:
            return provider_message_id(body.get("messageId"))
        brevo_code = safe_token(body.get("code"))
        if path == EMAIL_PATH and response.status_code == 400 and brevo_code == IDEMPOTENT_REPLAY:
            return ""
        raise DeliveryFailed(self._classify(response, brevo_code, body))

    async def aclose(self) -> None:
        """Close the HTTP client and its connections."""
        await self._client.aclose()

    def _request(self, delivery: Delivery) -> tuple[str, Mapping[str, object]]:
        content = delivery.content
        if delivery.channel is Channel.EMAIL and self._sender is not None:
            email: dict[str, object] = {
                "sender": self._sender,
                "to": [{"email": delivery.destination}],
                "subject": content.subject,
                "textContent": content.text,
                "headers": {"idempotencyKey": delivery.idempotency_key},
            }
            if content.html is not None:
                email["htmlContent"] = content.html
            return EMAIL_PATH, email
        if delivery.channel is Channel.SMS and self._sms_sender is not None:
            return SMS_PATH, {
                "type": "transactional",
                "sender": self._sms_sender,
                "recipient": delivery.destination.removeprefix("+"),
                "content": content.text,
                "tag": delivery.idempotency_key,
                "unicodeEnabled": not content.text.isascii(),
            }
        raise DeliveryFailed(
            DeliveryFailure(failure_class=FailureClass.REJECTED, code="channel_not_configured")
        )

    def _classify(
        self, response: httpx.Response, brevo_code: str | None, body: Mapping[str, object]
    ) -> DeliveryFailure:
        status = response.status_code
        code = f"{status}:{brevo_code}" if brevo_code else str(status)
        if 400 <= status < 500 and status != 429 and names_fraud_block(body):
            # Checked first: a fraud block names this one send (an SMS-pumping pattern, a
            # blocked number), even when Brevo words it with an account-wide status.
            return DeliveryFailure(failure_class=FailureClass.REJECTED, code=f"{status}:fraud")
        if 400 <= status < 500 and (status == 402 or brevo_code in ACCOUNT_CODES):
            return DeliveryFailure(failure_class=FailureClass.PROVIDER_SUSPENDED, code=code)
        now = self._clock.now()
        retry_after = parse_delay(response.headers.get("retry-after"), now) or parse_delay(
            response.headers.get("x-sib-ratelimit-reset"), now
        )
        return failure_for_status(status, code=code, retry_after=retry_after)
