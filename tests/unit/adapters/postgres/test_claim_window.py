"""A lane's claims: full first, then recent ones within the interval, full again after it or
after a full batch; a window shorter than the interval is refused (it would miss rows)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from outbox.adapters.postgres.claim_window import ClaimWindow


def _schedule(now: list[float]) -> ClaimWindow:
    return ClaimWindow(
        full_every=timedelta(seconds=2), window=timedelta(seconds=5), clock=lambda: now[0]
    )


def test_the_first_claim_is_full_and_the_next_ones_recent_until_the_interval_ends() -> None:
    now = [100.0]
    schedule = _schedule(now)

    windows = []
    for step in (0.0, 1.0, 0.9, 0.2):  # 100, 101, 101.9, 102.1
        now[0] += step
        started, window = schedule.next()
        schedule.came_back(started, full=False)
        windows.append(window)

    assert [None, 5.0, 5.0, None] == windows


def test_a_full_batch_makes_the_next_claim_full() -> None:
    now = [100.0]
    schedule = _schedule(now)
    schedule.came_back(schedule.next()[0], full=False)
    now[0] += 0.1
    started, window = schedule.next()
    assert 5.0 == window
    schedule.came_back(started, full=True)

    now[0] += 0.1
    assert schedule.next()[1] is None


def test_a_window_shorter_than_the_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="misses rows"):
        ClaimWindow(full_every=timedelta(seconds=2), window=timedelta(seconds=1))
