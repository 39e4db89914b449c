"""The system clock."""

from __future__ import annotations

from datetime import UTC, datetime


class SystemClock:
    """Reads the wall clock, in UTC."""

    def now(self) -> datetime:
        """The current time, timezone-aware, in UTC."""
        return datetime.now(UTC)
