"""``outboxctl doctor --json``: the findings, and the readings they come from."""

from __future__ import annotations

from outbox.application.operator.doctor import HealthReport
from outbox.domain.operator.doctor import Finding
from outbox.entrypoints.wire import Out


class FindingView(Out, frozen=True):
    """One thing wrong: which check, how urgent, about what, the figure, what to do."""

    check: str
    severity: str
    subject: str
    figure: str
    advice: str

    @classmethod
    def of(cls, finding: Finding) -> FindingView:
        """The body for ``finding``."""
        return cls.built(finding, severity=finding.severity.value)


class HolderView(Out, frozen=True):
    """A session, prepared transaction or slot holding the xmin horizon."""

    kind: str
    name: str
    state: str
    age_seconds: float


class TableView(Out, frozen=True):
    """A hot table's rows and size."""

    name: str
    live_rows: int
    dead_rows: int
    size_bytes: int
    autovacuum_enabled: bool
    last_vacuum_age_seconds: float | None


class LaneView(Out, frozen=True):
    """A lane's due work."""

    lane: str
    due: int
    oldest_due_age_seconds: float | None


class HealthView(Out, frozen=True):
    """The report: ``healthy`` is true when there is no finding."""

    healthy: bool
    findings: list[FindingView]
    autovacuum: bool
    horizon_holders: list[HolderView]
    tables: list[TableView]
    lanes: list[LaneView]

    @classmethod
    def of(cls, report: HealthReport) -> HealthView:
        """The body for ``report``."""
        readings = report.readings
        return cls(
            healthy=report.healthy,
            findings=[FindingView.of(finding) for finding in report.findings],
            autovacuum=readings.autovacuum,
            horizon_holders=[
                HolderView(
                    kind=h.kind, name=h.name, state=h.state, age_seconds=h.age.total_seconds()
                )
                for h in readings.holders
            ],
            tables=[
                TableView.built(
                    t,
                    last_vacuum_age_seconds=(
                        t.last_vacuum_age.total_seconds() if t.last_vacuum_age else None
                    ),
                )
                for t in readings.tables
            ],
            lanes=[
                LaneView(
                    lane=lane.lane,
                    due=lane.due,
                    oldest_due_age_seconds=(
                        lane.oldest_due_age.total_seconds() if lane.oldest_due_age else None
                    ),
                )
                for lane in readings.lanes
            ],
        )
