"""Record the verified receipts of one webhook call."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from outbox.application.delivery.receipt_ports import ReceiptStore
from outbox.application.ports import Telemetry
from outbox.domain.delivery.receipts import Receipt, RecordedReceipt

RECEIVED = "outbox_receipts_total"


@attrs.frozen(kw_only=True)
class RecordReceipts:
    """Keeps each receipt, in order, and reports what it did (counts, one event each)."""

    store: ReceiptStore
    telemetry: Telemetry

    async def __call__(self, receipts: Sequence[Receipt]) -> Sequence[RecordedReceipt]:
        """What recording each receipt did; raises StoreUnavailable (the provider retries)."""
        results: list[RecordedReceipt] = []
        for receipt in receipts:
            recorded = await self.store.record(receipt)
            results.append(recorded)
            if recorded.duplicate:
                result = "duplicate"
            elif recorded.message_id is None:
                result = "unmatched"
            else:
                result = "matched"
            self.telemetry.count(
                RECEIVED, provider=receipt.provider.value, event=receipt.event.value, result=result
            )
            self.telemetry.event(
                "receipt.recorded",
                provider=receipt.provider.value,
                receipt_event=receipt.event.value,
                result=result,
                message_id=str(recorded.message_id) if recorded.message_id else "",
                delivery_state=recorded.delivery_state or "",
            )
            if recorded.suppressed:
                self.telemetry.event(
                    "destination.suppressed",
                    provider=receipt.provider.value,
                    receipt_event=receipt.event.value,
                    message_id=str(recorded.message_id),
                )
        return results
