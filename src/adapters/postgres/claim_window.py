"""When a lane's claim may read only what became claimable recently, and when it reads all.

Under a held xmin horizon the dead versions of every row a lane claimed and recorded stay in
its claim indexes, below the live ones, and a scan that must prove there is nothing more
walks them all. A recent claim is bounded below by a window (``p_window_seconds`` of
``events.claim_outbox_batch``, 0058, and of ``events.claim_consumer_deliveries``, 0059), so
it never reads what lies below it; a full claim
reads everything due. A lane claims in full first, at least every ``full_every``, and after
any claim that came back full (it may be behind, with due rows older than the window); a
window at least as long as that interval then misses only what became claimable before the
last full claim started and was not visible to it (a producer's late commit), which the
next full claim takes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta

import attrs

# The workers' schedule, for the events lane and each consumer alike: recent claims of five
# seconds, a full claim at least every two.
CLAIM_WINDOW = timedelta(seconds=5)
FULL_CLAIM_EVERY = timedelta(seconds=2)


def _covers_the_interval(
    instance: ClaimWindow, _: attrs.Attribute[timedelta], value: timedelta
) -> None:
    if value < instance.full_every:
        raise ValueError("a claim window shorter than the interval between full claims misses rows")


@attrs.define
class ClaimWindow:
    """One kind of claim's schedule (a worker process's events claims, or one consumer's):
    ``next()`` before each claim, ``came_back()`` after it."""

    full_every: timedelta = FULL_CLAIM_EVERY
    window: timedelta = attrs.field(default=CLAIM_WINDOW, validator=_covers_the_interval)
    clock: Callable[[], float] = time.monotonic
    _full_at: float = attrs.field(default=float("-inf"), init=False)

    def next(self) -> tuple[float, float | None]:
        """When the claim starts, and its window in seconds: None for a full claim."""
        started = self.clock()
        if started >= self._full_at:
            self._full_at = started + self.full_every.total_seconds()
            return started, None
        return started, self.window.total_seconds()

    def came_back(self, started: float, *, full: bool) -> None:
        """After the claim that started at ``started``: a full batch makes the next claim full."""
        if full:
            self._full_at = started
