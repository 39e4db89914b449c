"""WasenderAPI status callbacks: the webhook secret checked, each status as a receipt.

Wasender signs nothing either: every call carries the webhook secret in the
``X-Webhook-Signature`` header, compared here in constant time. Whoever learns the secret
can forge receipts (docs/operations.md says so). ``messages.update`` statuses: 0 error
(failed), 3 delivered, 4 read and 5 played (delivered); 1 pending and 2 sent move nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from outbox.adapters.webhooks.sanitize import sanitise
from outbox.application.delivery.receipt_errors import WebhookRejected
from outbox.domain.delivery.receipts import Provider, Receipt, ReceiptEvent

SECRET_HEADER = "x-webhook-signature"  # noqa: S105 - a header name, not a secret
_STATUSES = {
    0: ReceiptEvent.FAILED,
    3: ReceiptEvent.DELIVERED,
    4: ReceiptEvent.DELIVERED,
    5: ReceiptEvent.DELIVERED,
}
_NAMES = {0: "error", 1: "pending", 2: "sent", 3: "delivered", 4: "read", 5: "played"}


def check_wasender_secret(presented: str | None, secret: str) -> None:
    """Raises WebhookRejected("credentials") unless ``presented`` is the secret."""
    if not secret or not hmac.compare_digest((presented or "").encode(), secret.encode()):
        raise WebhookRejected("credentials")


def wasender_receipts(body: bytes) -> list[Receipt]:
    """The receipts of one Wasender callback (none for events other than status updates).

    Raises WebhookRejected when the body is not Wasender's JSON.
    """
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise WebhookRejected("body_not_json") from None
    if not isinstance(parsed, Mapping) or not isinstance(parsed.get("event"), str):
        raise WebhookRejected("wasender_not_an_event")
    if parsed["event"] not in ("messages.update", "message.update"):
        return []
    data = parsed.get("data")
    updates = data if isinstance(data, list) else [data]
    return [_receipt(parsed, item) for item in updates]


def _receipt(envelope: Mapping[str, Any], item: object) -> Receipt:
    if not isinstance(item, Mapping):
        raise WebhookRejected("wasender_not_an_event")
    key = item.get("key")
    update = item.get("update")
    status = update.get("status") if isinstance(update, Mapping) else None
    # The id the send answered (msgId) when the callback carries it, else WhatsApp's own.
    message_id = item.get("msgId")
    if message_id is None and isinstance(key, Mapping):
        message_id = key.get("id")
    if not isinstance(status, int) or isinstance(status, bool) or message_id is None:
        raise WebhookRejected("wasender_not_an_event")
    occurred_at = _moment(envelope.get("timestamp"))
    event_id = hashlib.sha256(f"{message_id}|{status}".encode()).hexdigest()
    return Receipt(
        provider=Provider.WASENDER,
        event_id=event_id,
        provider_message_id=str(message_id)[:300],
        event=_STATUSES.get(status, ReceiptEvent.OTHER),
        occurred_at=occurred_at,
        detail=_NAMES.get(status, str(status)),
        raw=sanitise({"event": envelope.get("event"), "data": item}),
    )


def _moment(value: object) -> datetime:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        seconds = value / 1000 if value > 10**11 else value
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            pass
    raise WebhookRejected("wasender_time_missing")
