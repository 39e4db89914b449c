"""``outboxctl doctor``: read the database's health and say what to do about it."""

from __future__ import annotations

from typing import Protocol

import attrs

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
