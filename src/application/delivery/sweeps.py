"""The sweeps: one step run in bounded batches until a batch comes back short.

Expiry dead-letters unsent messages whose secret can no longer be used (a row under a live
lease is left to its worker, whose pre-send check expires it). Retention deletes final
messages, and final tenant events, past their windows (30 days published, 90 days
dead-lettered by default) with their history, never a live row or an unresolved dead
letter's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

import attrs

from outbox.application.delivery.ports import DispatchStore
from outbox.application.ports import Telemetry
from outbox.domain.delivery.retention import RetentionPolicy

BATCH_SIZE = 1000


class Purging(Protocol):
    """A store whose final rows retention deletes (messages, tenant events)."""

    async def purge(self, *, retention: RetentionPolicy, limit: int) -> int:
        """Delete up to ``limit`` rows past ``retention``; how many."""
        ...


@attrs.frozen(kw_only=True)
class Sweep:
    """Runs ``step(limit)`` until it answers fewer than ``batch_size`` rows or ``max_batches``
    ran; counts the rows under ``outbox_sweep_rows_total{sweep=name}`` and reports
    ``sweep.<name>.finished`` with ``<noun>=rows``."""

    name: str
    noun: str
    step: Callable[[int], Awaitable[int]]
    telemetry: Telemetry
    batch_size: int = BATCH_SIZE
    max_batches: int = 100

    async def __call__(self) -> int:
        """Run the sweep; return how many rows it handled."""
        total = 0
        for _ in range(self.max_batches):
            done = await self.step(self.batch_size)
            total += done
            if done < self.batch_size:
                break
        self.telemetry.count("outbox_sweep_rows_total", total, sweep=self.name)
        self.telemetry.event(f"sweep.{self.name}.finished", level="info", **{self.noun: total})
        return total


def expiry_sweep(store: DispatchStore, telemetry: Telemetry, batch_size: int = BATCH_SIZE) -> Sweep:
    """Dead-letter expired messages nobody holds."""
    return Sweep(
        name="expiry",
        noun="expired",
        step=lambda limit: store.expire(limit=limit),
        telemetry=telemetry,
        batch_size=batch_size,
    )


def retention_sweep(
    store: Purging,
    telemetry: Telemetry,
    *,
    name: str = "retention",
    retention: RetentionPolicy | None = None,
    batch_size: int = BATCH_SIZE,
) -> Sweep:
    """Delete ``store``'s final rows past ``retention`` (the default windows when None)."""
    policy = retention or RetentionPolicy()
    return Sweep(
        name=name,
        noun="purged",
        step=lambda limit: store.purge(retention=policy, limit=limit),
        telemetry=telemetry,
        batch_size=batch_size,
    )
