"""Readiness: the database answers and every migration is applied."""

from __future__ import annotations

import attrs

from application.ports import ReadinessProbe, ReadinessReport, Telemetry


@attrs.frozen(kw_only=True)
class CheckReadiness:
    """Asks the probe and reports a failing check once per call."""

    probe: ReadinessProbe
    telemetry: Telemetry

    async def __call__(self) -> ReadinessReport:
        """The report; never raises for a database failure."""
        report = await self.probe.check()
        if not report.ready:
            self.telemetry.event(
                "readiness.failed",
                level="warning",
                database_reachable=report.database_reachable,
                pending_migrations=len(report.pending_migrations),
            )
        return report
