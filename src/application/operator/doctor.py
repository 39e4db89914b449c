"""``outboxctl doctor``: read the database's health and say what to do about it."""

from __future__ import annotations

from collections import Counter
from typing import Protocol

import attrs

from outbox.application.ports import Telemetry
from outbox.domain.operator.doctor import Finding, Readings, Thresholds, diagnose


class HealthReadings(Protocol):
    """Reads sessions, autovacuum, the hot tables, the lanes, consumers, relay and slots."""

    async def read(self) -> Readings:
        """Every reading, taken together."""
        ...


@attrs.frozen(kw_only=True)
class HealthReport:
    """The readings and what they mean."""

    readings: Readings
    findings: tuple[Finding, ...]

    @property
    def healthy(self) -> bool:
        """Whether nothing needs doing."""
        return not self.findings


@attrs.frozen(kw_only=True)
class CheckHealth:
    """Takes the readings and diagnoses them."""

    readings: HealthReadings
    thresholds: Thresholds = attrs.field(factory=Thresholds)

    async def __call__(self) -> HealthReport:
        """The report; raises StoreUnavailable when the database cannot be read."""
        readings = await self.readings.read()
        return HealthReport(readings=readings, findings=diagnose(readings, self.thresholds))


# The gauges the admin listener sets from the readings before each scrape (docs/operations.md).
HEALTH_GAUGES = (
    "outbox_db_horizon_age_seconds",
    "outbox_db_autovacuum",
    "outbox_db_table_live_rows",
    "outbox_db_table_dead_rows",
    "outbox_db_table_size_bytes",
    "outbox_lane_due",
    "outbox_lane_oldest_due_age_seconds",
    "outbox_relay_last_published_age_seconds",
    "outbox_db_replication_slot_retained_bytes",
    "outbox_doctor_findings",
)


@attrs.frozen(kw_only=True)
class ObserveHealth:
    """The doctor's readings and findings as gauges, replaced whole at each scrape so that a
    table, lane or slot that went away leaves no stale series."""

    check: CheckHealth
    telemetry: Telemetry

    async def __call__(self) -> HealthReport:
        """Read, diagnose, and set the gauges; the report."""
        report = await self.check()
        readings, observe = report.readings, self.telemetry.observe
        for name in HEALTH_GAUGES:
            self.telemetry.forget(name)
        ages = [holder.age.total_seconds() for holder in readings.holders]
        observe("outbox_db_horizon_age_seconds", max(ages, default=0.0))
        observe("outbox_db_autovacuum", 1.0 if readings.autovacuum else 0.0)
        for table in readings.tables:
            observe("outbox_db_table_live_rows", table.live_rows, table=table.name)
            observe("outbox_db_table_dead_rows", table.dead_rows, table=table.name)
            observe("outbox_db_table_size_bytes", table.size_bytes, table=table.name)
        for lane in readings.lanes:
            age = lane.oldest_due_age.total_seconds() if lane.oldest_due_age else 0.0
            observe("outbox_lane_due", lane.due, lane=lane.lane)
            observe("outbox_lane_oldest_due_age_seconds", age, lane=lane.lane)
        relay = readings.relay
        if relay is not None and relay.last_published_age is not None:
            observe(
                "outbox_relay_last_published_age_seconds", relay.last_published_age.total_seconds()
            )
        for slot in readings.slots:
            observe(
                "outbox_db_replication_slot_retained_bytes", slot.retained_bytes, slot=slot.name
            )
        counted = Counter((finding.check, finding.severity.value) for finding in report.findings)
        for (check, severity), count in counted.items():
            observe("outbox_doctor_findings", count, check=check, severity=severity)
        return report
