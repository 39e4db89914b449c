"""SES notifications (delivered through SNS) as receipts.

Both shapes SES publishes are read: identity notifications (``notificationType``) and
configuration-set events (``eventType``). Bounce Permanent is a hard bounce, Transient and
Undetermined soft; Complaint, Delivery and Reject map one to one; anything else (Send,
Open, Click, DeliveryDelay) is kept with no effect.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from outbox.adapters.webhooks.sanitize import mask_text, sanitise
from outbox.adapters.webhooks.sns import SnsMessage
from outbox.application.delivery.receipt_errors import WebhookRejected
from outbox.domain.delivery.receipts import MAX_DETAIL, Provider, Receipt, ReceiptEvent

_EVENTS = {
    "Delivery": ReceiptEvent.DELIVERED,
    "Complaint": ReceiptEvent.COMPLAINED,
    "Reject": ReceiptEvent.FAILED,
}
_PARTS = {"Bounce": "bounce", "Complaint": "complaint", "Delivery": "delivery", "Reject": "reject"}


def ses_receipt(message: SnsMessage) -> Receipt:
    """The receipt a verified SNS notification from SES carries.

    Raises WebhookRejected when the notification is not an SES event.
    """
    try:
        body = json.loads(message.message)
    except ValueError:
        raise WebhookRejected("ses_not_json") from None
    if not isinstance(body, dict):
        raise WebhookRejected("ses_not_json")
    kind = body.get("notificationType") or body.get("eventType")
    mail = body.get("mail")
    if not isinstance(kind, str) or not isinstance(mail, Mapping):
        raise WebhookRejected("ses_not_an_event")
    part = body.get(_PARTS.get(kind, kind.lower()))
    part = part if isinstance(part, Mapping) else {}
    event, detail = _event(kind, part)
    return Receipt(
        provider=Provider.SES,
        event_id=message.message_id[:200],
        provider_message_id=str(mail.get("messageId", ""))[:300],
        event=event,
        occurred_at=_moment(part.get("timestamp"))
        or _moment(mail.get("timestamp"))
        or message.timestamp,
        detail=detail,
        raw={
            "sns": {
                "Type": message.type,
                "MessageId": message.message_id,
                "TopicArn": message.topic_arn,
                "Timestamp": message.timestamp.isoformat(),
            },
            "message": sanitise(body),
        },
    )


def _event(kind: str, part: Mapping[str, Any]) -> tuple[ReceiptEvent, str]:
    if kind == "Bounce":
        bounce_type = str(part.get("bounceType", ""))
        words = f"{bounce_type}/{part.get('bounceSubType', '')}"
        hard = bounce_type == "Permanent"
        return (ReceiptEvent.BOUNCED if hard else ReceiptEvent.SOFT_BOUNCED), _short(words)
    if kind == "Complaint":
        return ReceiptEvent.COMPLAINED, _short(str(part.get("complaintFeedbackType", "")))
    if kind == "Reject":
        return ReceiptEvent.FAILED, _short(str(part.get("reason", "")))
    return _EVENTS.get(kind, ReceiptEvent.OTHER), _short(kind if kind not in _EVENTS else "")


def _short(text: str) -> str:
    return mask_text(text)[:MAX_DETAIL]


def _moment(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None
