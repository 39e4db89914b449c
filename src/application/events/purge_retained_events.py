"""The events retention sweep: delete final tenant events past their retention."""

from __future__ import annotations

import attrs

from outbox.application.events.ports import EventOutboxStore
from outbox.application.ports import Telemetry
from outbox.domain.delivery.retention import RetentionPolicy


@attrs.frozen(kw_only=True)
class PurgeRetainedEvents:
    """Deletes events whose records were published or dead-lettered long enough ago.

    The same windows as the messages' (30 days published, 90 days dead-lettered), in
    bounded batches; a live record, or an unresolved dead letter's, is never deleted.
    """

    store: EventOutboxStore
    telemetry: Telemetry
    retention: RetentionPolicy = attrs.field(factory=RetentionPolicy)
    batch_size: int = 1000
    max_batches: int = 100

    async def __call__(self) -> int:
        """Run the sweep; return how many events it deleted."""
        total = 0
        for _ in range(self.max_batches):
            purged = await self.store.purge(retention=self.retention, limit=self.batch_size)
            total += purged
            if purged < self.batch_size:
                break
        self.telemetry.count("outbox_sweep_rows_total", total, sweep="events_retention")
        self.telemetry.event("sweep.events_retention.finished", purged=total)
        return total
