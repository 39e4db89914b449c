"""The workers view on the wire (``outboxctl workers --json``, the staff route)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from outbox.application.operator.console_views import WorkerLane
from outbox.entrypoints.wire import Out


class WorkerLaneView(Out, frozen=True):
    """One lane of one worker process; ``running`` is false once it stopped or went quiet
    for three beats; the lag is null when nothing waits."""

    owner: str
    lane: str
    started_at: datetime
    seen_at: datetime
    running: bool
    lag_seconds: float | None

    @classmethod
    def of(cls, row: WorkerLane) -> WorkerLaneView:
        """The body for ``row``."""
        return cls.built(
            row,
            lag_seconds=row.lag.total_seconds() if row.lag is not None else None,
        )


class WorkersView(Out, frozen=True):
    """Every lane of every worker process seen in the last day, running ones first."""

    items: list[WorkerLaneView]

    @classmethod
    def of(cls, rows: Sequence[WorkerLane]) -> WorkersView:
        """The body for ``rows``."""
        return cls(items=[WorkerLaneView.of(row) for row in rows])
