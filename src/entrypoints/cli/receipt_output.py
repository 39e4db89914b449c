"""How receipts and suppressions print: JSON as the staff routes answer, or tables."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from outbox.application.delivery.operations import MessageReceipts
from outbox.application.delivery.views import ReceiptView, SuppressionChange, SuppressionView
from outbox.entrypoints.cli.output import lines, short_time, table


def receipt_json(receipt: ReceiptView) -> dict[str, Any]:
    """One receipt (never its raw body)."""
    return {
        "id": receipt.id,
        "provider": receipt.provider,
        "event": receipt.event,
        "detail": receipt.detail,
        "occurredAt": receipt.occurred_at,
        "receivedAt": receipt.received_at,
    }


def receipts_json(receipts: MessageReceipts, *, sent: bool = True) -> dict[str, Any]:
    """A message's delivery state (null when it was never published) and receipts."""
    return {
        "deliveryState": receipts.delivery_state.value if sent else None,
        "receipts": [receipt_json(r) for r in receipts.receipts],
    }


def receipts_table(receipts: MessageReceipts, *, sent: bool = True) -> Table:
    """The receipts, oldest first, under the state they add up to (none for a message that
    was never published: "accepted" would claim a provider took it)."""
    state = receipts.delivery_state.value if sent else "none: never published"
    rows = table(
        "Provider\nEvent",
        "Occurred (UTC)\nReceived (UTC)",
        "Detail",
        title=f"receipts (delivery state: {state})",
        words=(0,),
    )
    for receipt in receipts.receipts:
        rows.add_row(
            lines(receipt.provider, receipt.event),
            lines(short_time(receipt.occurred_at), short_time(receipt.received_at)),
            lines(receipt.detail),
        )
    return rows


def suppression_json(suppression: SuppressionView) -> dict[str, Any]:
    """One suppression, masked."""
    return {
        "id": suppression.id,
        "destination": suppression.destination,
        "channel": suppression.channel,
        "cause": suppression.cause,
        "reason": suppression.reason,
        "createdAt": suppression.created_at,
        "liftedAt": suppression.lifted_at,
    }


def suppressions_table(suppressions: list[SuppressionView]) -> Table:
    """Suppressions, newest first."""
    rows = table(
        "Id",
        "Destination\nChannel",
        "Cause",
        "Since (UTC)\nLifted (UTC)",
        "Reason",
        ids=1,
        words=(2,),
    )
    for item in suppressions:
        rows.add_row(
            str(item.id),
            lines(item.destination, item.channel),
            item.cause,
            lines(short_time(item.created_at), short_time(item.lifted_at)),
            lines(item.reason),
        )
    return rows


def change_json(change: SuppressionChange | None) -> dict[str, Any] | None:
    """An add or a lift (null: nothing to lift)."""
    if change is None:
        return None
    return {"id": change.id, "destination": change.destination, "changed": change.changed}
