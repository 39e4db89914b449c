"""The held-horizon benchmark runs end to end at tiny sizes, on the tests' own server: both
runs deliver every code they committed (lost = 0), the holder really holds the horizon (dead
rows pile up while it does), and the report, its JSON and its chart come out.

Timings are never asserted: ``python -m bench.held_horizon`` on a quiet machine measures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from bench.held_horizon import p99_by_window
from tests import postgres_server as servers

pytestmark = pytest.mark.timeout(300)

REPO = Path(__file__).resolve().parents[2]


def test_a_tiny_held_horizon_run_loses_nothing_and_shows_the_dead_rows(
    tmp_path: Path, postgres_server: servers.TestServer
) -> None:
    out, chart = tmp_path / "held.json", tmp_path / "held.svg"
    env = {**os.environ, "OUTBOX_DATABASE_URL": postgres_server.admin_url}

    completed = subprocess.run(
        [
            sys.executable, "-m", "bench.held_horizon",
            "--seconds", "12", "--hold-from", "2", "--hold-until", "10",
            "--rate", "40", "--sample", "1", "--reclaim-wait", "5",
            "--out", str(out), "--chart", str(chart),
        ],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=280, check=False,
    )  # fmt: skip

    assert 0 == completed.returncode, completed.stdout + completed.stderr
    assert "load average before" in completed.stdout
    report = json.loads(out.read_text())
    for run in ("clean", "held"):
        assert 40 * 12 == report[run]["committed"], run
        assert report[run]["committed"] == report[run]["delivered"], run  # lost = 0
        assert report[run]["claim_p99_ms"] > 0
        assert report[run]["wal_bytes_per_message"] > 0
        # Each lane's claims, counted by the server: at least one per batch delivered.
        assert 0 < report[run]["claims_per_code"], run
        assert 0 < report[run]["claims_per_event"], run
        # The events' p99 by 10-s window of their appends: when their lane fell behind.
        windows = report[run]["events"]["p99_by_window"]
        assert windows, run
        assert [10.0 * n for n in range(len(windows))] == [start for start, _ in windows]
    assert "claims / event" in completed.stdout
    assert report["held"]["peak_dead"]["outbox.messages"] > 0
    svg = ET.parse(chart).getroot()  # noqa: S314 - our own file
    assert svg.tag.endswith("svg")
    assert 4 == sum(1 for node in svg.iter() if node.tag.endswith("path"))


def test_the_p99_of_each_window_is_its_own():
    # Window 0 holds 1..100 ms, window 1 ten points of 500 ms, window 2 only nine: left out.
    points = [(n / 20, float(n)) for n in range(1, 101)]
    points += [(10 + n / 2, 500.0) for n in range(10)]
    points += [(25.0, 9_999.0)] * 9

    windows = p99_by_window(points)

    assert [0.0, 10.0] == [start for start, _ in windows]
    assert 99.0 < windows[0][1] < 100.0
    assert 500.0 == windows[1][1]
