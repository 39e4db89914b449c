"""Readiness: the database answers, the role exists, and every migration is applied."""

from __future__ import annotations

import attrs

from outbox.application.ports import ReadinessProbe, ReadinessReport, Telemetry


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
                check=report.failed,
                database_reachable=report.database_reachable,
                error_code=report.error_code or None,
                missing_role=report.missing_role,
                pending_migrations=len(report.pending_migrations),
                hint=report.hint,
            )
        return report
