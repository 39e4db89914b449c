"""A clock that only moves when a test moves it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs

EPOCH = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


@attrs.define
class FixedClock:
    """Returns ``current`` until ``advance`` moves it."""

    current: datetime = EPOCH

    def now(self) -> datetime:
        """The fixed current time."""
        return self.current

    def advance(self, delta: timedelta) -> None:
        """Move time forward by ``delta``."""
        self.current += delta
