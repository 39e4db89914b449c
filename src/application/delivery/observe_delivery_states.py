"""Refresh the delivery-state gauges (``outbox_delivery_states{state}``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import attrs

from outbox.application.ports import Telemetry


class DeliveryStateGauge(Protocol):
    """The delivery-state counts, read with no identity (a scrape has none)."""

    async def delivery_state_counts(self) -> Mapping[str, int]:
        """Published messages per delivery state, every state present.

        Raises StoreUnavailable for a transient database error.
        """
        ...


@attrs.frozen(kw_only=True)
class ObserveDeliveryStates:
    """Reads the counts and sets the gauges; called before each scrape."""

    gauge: DeliveryStateGauge
    telemetry: Telemetry

    async def __call__(self) -> Mapping[str, int]:
        """The counts it observed."""
        counts = await self.gauge.delivery_state_counts()
        for state, count in counts.items():
            self.telemetry.observe("outbox_delivery_states", count, state=state)
        return counts
