"""Refresh the tenant events gauges, one series per organization of the bounded metrics rows.

``outbox_tenant_events{organization,state}``, ``..._oldest_due_age_seconds{organization}``,
``..._dead_letters{organization}`` and ``..._parked_aggregates{organization}``: the top
organizations by backlog and one ``other`` series; an organization that left the top is
forgotten, so the number of series stays bounded.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from outbox.application.operator.event_ports import EventBacklogGauge
from outbox.application.operator.event_views import OrganizationBacklog
from outbox.application.ports import Telemetry

GAUGES = (
    "outbox_tenant_events",
    "outbox_tenant_events_oldest_due_age_seconds",
    "outbox_tenant_events_dead_letters",
    "outbox_tenant_events_parked_aggregates",
)


@attrs.frozen(kw_only=True)
class ObserveEventBacklog:
    """Reads the bounded counts and replaces the gauges' series; call it before each scrape."""

    gauge: EventBacklogGauge
    telemetry: Telemetry

    async def __call__(self) -> Sequence[OrganizationBacklog]:
        """The rows it observed; an age reads 0 when nothing is due."""
        rows = await self.gauge.metrics()
        for name in GAUGES:
            self.telemetry.forget(name)
        for row in rows:
            organization = row.organization
            self.telemetry.observe(
                "outbox_tenant_events", row.pending, organization=organization, state="pending"
            )
            self.telemetry.observe(
                "outbox_tenant_events", row.leased, organization=organization, state="leased"
            )
            age = row.oldest_due_age.total_seconds() if row.oldest_due_age else 0.0
            self.telemetry.observe(
                "outbox_tenant_events_oldest_due_age_seconds", age, organization=organization
            )
            self.telemetry.observe(
                "outbox_tenant_events_dead_letters", row.dead_letters, organization=organization
            )
            self.telemetry.observe(
                "outbox_tenant_events_parked_aggregates",
                row.parked_aggregates,
                organization=organization,
            )
        return rows
