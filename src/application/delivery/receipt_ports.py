"""The port receipts are recorded through."""

from __future__ import annotations

from typing import Protocol

from outbox.domain.delivery.receipts import Receipt, RecordedReceipt


class ReceiptStore(Protocol):
    """Keeps receipts and applies them: delivery state, suppression; one transaction each."""

    async def record(self, receipt: Receipt) -> RecordedReceipt:
        """Keep ``receipt`` once and apply it to the message whose published attempt
        recorded its provider message id (none: kept, unmatched, no effect).

        Raises StoreUnavailable for a transient database error.
        """
        ...
