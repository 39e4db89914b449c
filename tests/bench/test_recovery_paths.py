"""The recovery benchmark runs and reports both paths (its figures are never asserted)."""

from __future__ import annotations

import pytest

from bench.recovery_paths import measure, report

pytestmark = pytest.mark.integration


async def test_the_recovery_benchmark_reports_both_paths_and_their_ratio(
    database_url: str,
) -> None:
    times = await measure(database_url, 3)

    assert {"known": 3, "unknown": 3} == {path: len(runs) for path, runs in times.items()}
    printed = report(times)
    assert "known / unknown median ratio" in printed
    assert {"known", "unknown"} <= {line.split()[0] for line in printed.splitlines()}
