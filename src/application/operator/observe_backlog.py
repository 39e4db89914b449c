"""Refresh the backlog gauges (``outbox_messages{state}``, ``outbox_oldest_due_age_seconds``)."""

from __future__ import annotations

import attrs

from outbox.application.operator.ports import BacklogGauge
from outbox.application.operator.views import Backlog
from outbox.application.ports import Telemetry


@attrs.frozen(kw_only=True)
class ObserveBacklog:
    """Reads the counts and sets the gauges; call it before each scrape or on a timer."""

    gauge: BacklogGauge
    telemetry: Telemetry

    async def __call__(self) -> Backlog:
        """The backlog it observed; the age gauge reads 0 when nothing is due."""
        backlog = await self.gauge.backlog()
        for state, count in backlog.by_state().items():
            self.telemetry.observe("outbox_messages", count, state=state.value)
        age = backlog.oldest_due_age.total_seconds() if backlog.oldest_due_age else 0.0
        self.telemetry.observe("outbox_oldest_due_age_seconds", age)
        return backlog
