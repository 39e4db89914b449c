"""Fixed-window rate limits: at most ``limit`` hits per ``window``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@attrs.frozen(kw_only=True)
class RateLimit:
    """At most ``limit`` hits in each fixed window of length ``window``."""

    limit: int
    window: timedelta

    def __attrs_post_init__(self) -> None:
        if self.limit < 1 or self.window <= timedelta(0):
            raise ValueError("a rate limit allows at least one hit in a positive window")

    def window_start(self, now: datetime) -> datetime:
        """The start of the window ``now`` falls in (windows are aligned to the epoch)."""
        elapsed = (now - _EPOCH) // self.window
        return _EPOCH + elapsed * self.window

    def retry_after(self, *, hits: int, now: datetime) -> timedelta | None:
        """None if the ``hits``-th hit of this window is allowed, else the wait until the next."""
        if hits <= self.limit:
            return None
        return self.window_start(now) + self.window - now
