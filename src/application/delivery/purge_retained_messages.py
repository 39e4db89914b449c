"""The retention sweep: delete final messages past their retention, with history."""

from __future__ import annotations

import attrs

from outbox.application.delivery.ports import DispatchStore
from outbox.application.ports import Telemetry
from outbox.domain.delivery.retention import RetentionPolicy


@attrs.frozen(kw_only=True)
class PurgeRetainedMessages:
    """Deletes old published and dead-lettered messages in bounded batches; never a live one."""

    store: DispatchStore
    telemetry: Telemetry
    retention: RetentionPolicy = attrs.field(factory=RetentionPolicy)
    batch_size: int = 1000
    max_batches: int = 100

    async def __call__(self) -> int:
        """Run the sweep; return how many messages it deleted."""
        total = 0
        for _ in range(self.max_batches):
            purged = await self.store.purge(retention=self.retention, limit=self.batch_size)
            total += purged
            if purged < self.batch_size:
                break
        self.telemetry.count("outbox_sweep_rows_total", total, sweep="retention")
        self.telemetry.event("sweep.retention.finished", purged=total)
        return total
