"""The expiry sweep: dead-letter unsent messages whose secret can no longer be used."""

from __future__ import annotations

import attrs

from outbox.application.delivery.ports import DispatchStore
from outbox.application.ports import Telemetry


@attrs.frozen(kw_only=True)
class SweepExpiredMessages:
    """Expires messages in bounded batches until none is left or ``max_batches`` ran.

    Rows under a live lease are left to their worker, whose pre-send check expires them.
    """

    store: DispatchStore
    telemetry: Telemetry
    batch_size: int = 1000
    max_batches: int = 100

    async def __call__(self) -> int:
        """Run the sweep; return how many messages it dead-lettered."""
        total = 0
        for _ in range(self.max_batches):
            expired = await self.store.expire(limit=self.batch_size)
            total += expired
            if expired < self.batch_size:
                break
        self.telemetry.count("outbox_sweep_rows_total", total, sweep="expiry")
        self.telemetry.event("sweep.expiry.finished", expired=total)
        return total
