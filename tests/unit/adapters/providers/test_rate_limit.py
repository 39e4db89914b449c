"""The send quota spaces sends evenly, on a fake event-loop clock (no real waiting).

The rates are powers of two, whose intervals are exact in binary: the fake clock counts in
whole microseconds, and an interval that does not round exactly could leave the bucket a
rounding error short of room at the very moment its timer fires.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import looptime
import pytest

from outbox.adapters.providers.rate_limit import LeakyBucketRateLimit


def _grant_times(per_second: float, sends: int) -> list[float]:
    """When each of ``sends`` concurrent acquires is granted, in fake seconds from 0."""
    loop = looptime.new_event_loop(start=0)

    async def run() -> list[float]:
        quota = LeakyBucketRateLimit(per_second)
        times: list[float] = []

        async def send() -> None:
            await quota.acquire()
            times.append(asyncio.get_running_loop().time())

        await asyncio.gather(*(send() for _ in range(sends)))
        return times

    try:
        return loop.run_until_complete(run())
    finally:
        loop.close()


def test_sends_are_spaced_one_interval_apart() -> None:
    assert pytest.approx([n * 0.25 for n in range(12)]) == _grant_times(4, 12)


def test_no_second_holds_more_sends_than_the_quota() -> None:
    times = _grant_times(16, 100)

    per_second = Counter(int(at) for at in times)
    assert 100 == len(times)
    assert 16 == max(per_second.values())
    assert pytest.approx(99 / 16) == max(times)  # the first goes at once


def test_a_rate_below_one_a_second_waits_whole_seconds() -> None:
    assert pytest.approx([0.0, 2.0, 4.0]) == _grant_times(0.5, 3)


def test_a_rate_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        LeakyBucketRateLimit(0)
