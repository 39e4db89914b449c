"""Refresh the consumers' lag gauges, one series per consumer.

``outbox_consumer_events_behind{consumer}``, ``outbox_consumer_oldest_undelivered_age_seconds
{consumer}`` (0 when nothing waits) and ``outbox_consumer_dead_letters{consumer}``; a consumer
that is gone is forgotten. Consumers are few (each is registered by hand), so the series are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import attrs

from outbox.application.events.consumer_ports import ConsumerLag
from outbox.application.ports import Telemetry

GAUGES = (
    "outbox_consumer_events_behind",
    "outbox_consumer_oldest_undelivered_age_seconds",
    "outbox_consumer_dead_letters",
)


class ConsumerLagSource(Protocol):
    """Where the lag is read (``events.consumer_lag()``, the worker's role may call it)."""

    async def lag(self) -> Sequence[ConsumerLag]:
        """Every consumer with its lag, by code."""
        ...


@attrs.frozen(kw_only=True)
class ObserveConsumerLag:
    """Reads every consumer's lag and replaces the gauges' series; returns how many."""

    source: ConsumerLagSource
    telemetry: Telemetry

    async def __call__(self) -> int:
        """Observe once; the number of consumers observed."""
        rows = await self.source.lag()
        for name in GAUGES:
            self.telemetry.forget(name)
        for row in rows:
            age = row.oldest_undelivered.total_seconds() if row.oldest_undelivered else 0.0
            self.telemetry.observe(
                "outbox_consumer_events_behind", row.events_behind, consumer=row.consumer
            )
            self.telemetry.observe(
                "outbox_consumer_oldest_undelivered_age_seconds", age, consumer=row.consumer
            )
            self.telemetry.observe(
                "outbox_consumer_dead_letters", row.dead_letters, consumer=row.consumer
            )
        return len(rows)
