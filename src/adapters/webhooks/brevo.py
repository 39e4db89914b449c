"""Brevo transactional webhooks: the credential checked, each event as a receipt.

Brevo signs nothing. What it offers is a credential the webhook's URL or configuration
carries: basic credentials (``https://user:password@host/...``) or a bearer token, sent
in the Authorization header on every call. Whoever learns the credential can forge
receipts (docs/operations.md says so); it is compared in constant time.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from outbox.adapters.webhooks.sanitize import mask_text, sanitise
from outbox.application.delivery.receipt_errors import WebhookRejected
from outbox.domain.delivery.receipts import MAX_DETAIL, Provider, Receipt, ReceiptEvent

_EVENTS = {
    "delivered": ReceiptEvent.DELIVERED,
    "hard_bounce": ReceiptEvent.BOUNCED,
    "hardbounce": ReceiptEvent.BOUNCED,
    "soft_bounce": ReceiptEvent.SOFT_BOUNCED,
    "softbounce": ReceiptEvent.SOFT_BOUNCED,
    "deferred": ReceiptEvent.SOFT_BOUNCED,
    "spam": ReceiptEvent.COMPLAINED,
    "complaint": ReceiptEvent.COMPLAINED,
    "blocked": ReceiptEvent.FAILED,
    "invalid_email": ReceiptEvent.FAILED,
    "invalid": ReceiptEvent.FAILED,
    "error": ReceiptEvent.FAILED,
}


def check_brevo_credential(authorization: str | None, token: str) -> None:
    """Accept ``Authorization: Bearer <token>`` or basic credentials whose password is it.

    Raises WebhookRejected("credentials") otherwise; the comparison takes constant time.
    """
    presented = b""
    if authorization:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer":
            presented = value.strip().encode()
        elif scheme.lower() == "basic":
            try:
                decoded = base64.b64decode(value.strip(), validate=True)
            except (binascii.Error, ValueError):
                decoded = b""
            presented = decoded.partition(b":")[2]
    if not token or not hmac.compare_digest(presented, token.encode()):
        raise WebhookRejected("credentials")


def brevo_receipts(body: bytes) -> list[Receipt]:
    """The receipts of one Brevo webhook call (one event, or a batch of them).

    Raises WebhookRejected when the body is not Brevo's JSON.
    """
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise WebhookRejected("body_not_json") from None
    events = parsed if isinstance(parsed, list) else [parsed]
    if not events or not all(isinstance(item, Mapping) for item in events):
        raise WebhookRejected("brevo_not_an_event")
    return [_receipt(item) for item in events]


def _receipt(item: Mapping[str, Any]) -> Receipt:
    name = item.get("event")
    message_id = item.get("message-id") or item.get("messageId")
    if not isinstance(name, str) or not isinstance(message_id, str):
        raise WebhookRejected("brevo_not_an_event")
    occurred_at = _moment(item)
    # Brevo numbers no event: its message, kind and time identify one.
    event_id = hashlib.sha256(f"{message_id}|{name}|{occurred_at.isoformat()}".encode()).hexdigest()
    return Receipt(
        provider=Provider.BREVO,
        event_id=event_id,
        provider_message_id=message_id[:300],
        event=_EVENTS.get(name.lower(), ReceiptEvent.OTHER),
        occurred_at=occurred_at,
        detail=mask_text(f"{name}: {item.get('reason', '')}".rstrip(": "))[:MAX_DETAIL],
        raw=sanitise(item),
    )


def _moment(item: Mapping[str, Any]) -> datetime:
    for key, scale in (("ts_epoch", 1000.0), ("ts_event", 1.0), ("ts", 1.0)):
        value = item.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            try:
                return datetime.fromtimestamp(value / scale, UTC)
            except (OverflowError, OSError, ValueError):
                break
    raise WebhookRejected("brevo_time_missing")
