"""A provider's send quota as a leaky bucket (aiolimiter), so the worker slows down first.

A provider that answers 429 has already refused the send; with its quota configured
(``OUTBOX_<PROVIDER>_RATE_PER_SECOND``) the worker waits for room before each send instead.
The bucket holds a single send, so sends are spaced evenly, never in a burst: at N per
second no one-second window ever holds more than N sends.
"""

from __future__ import annotations

from aiolimiter import AsyncLimiter


class LeakyBucketRateLimit:
    """SendRateLimit over aiolimiter, on the running event loop's clock.

    Waiters are served in arrival order; the dispatcher starts its sends highest priority
    first, so codes take the room before notifications of the same batch.
    """

    def __init__(self, per_second: float) -> None:
        if not per_second > 0:
            raise ValueError("a send rate must be positive")
        self.per_second = per_second
        self._limiter = AsyncLimiter(1, time_period=1 / per_second)

    async def acquire(self) -> None:
        """Return when one more send fits under the quota."""
        await self._limiter.acquire()
