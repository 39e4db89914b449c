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

from bench.databases import Database
from bench.held_horizon import HeldHorizon, HorizonRun, Sample, checks, p99_by_window
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
        assert report[run]["event_claim_p99_ms"] > 0  # the events lane's claims, timed too
        assert report[run]["wal_bytes_per_message"] > 0
        # Each lane's claims, counted by the server: at least one per batch delivered.
        assert 0 < report[run]["claims_per_code"], run
        assert 0 < report[run]["claims_per_event"], run
        assert 0 < report[run]["consumer_claims_per_event"], run
        assert set(report[run]["server_ms_per_claim"]) == {"codes", "events", "consumers"}, run
        # The events' p99 by 10-s window of their appends: when their lane fell behind.
        windows = report[run]["events"]["p99_by_window"]
        assert windows, run
        assert [10.0 * n for n in range(len(windows))] == [start for start, _ in windows]
    assert "claims / event" in completed.stdout
    assert "events claim p99 (ms)" in completed.stdout
    # The check table: each target computed from the two runs, in the output and the JSON.
    assert "Targets, from the two runs above" in completed.stdout
    checks = report["checks"]
    assert {
        "throughput", "events.throughput", "claim_p99_ms", "event_claim_p99_ms", "lost",
        "events.lost", "events.order_violations", "reclaimed_after",
    } == set(checks)  # fmt: skip
    assert 0 == checks["lost"]["value"]
    assert checks["lost"]["met"] is True
    ratio = report["held"]["claim_p99_ms"] / report["clean"]["claim_p99_ms"]
    assert ratio == pytest.approx(checks["claim_p99_ms"]["value"])
    assert report["held"]["peak_dead"]["outbox.messages"] > 0
    # Each table whose dead rows rose in the hold is watched for its reclaim; none when clean.
    assert "outbox.messages" in report["held"]["reclaimed_by_table"]
    assert {} == report["clean"]["reclaimed_by_table"]
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


def _run(
    *, held: bool, throughput: float, claim_p99_ms: float, reclaimed: float | None
) -> HorizonRun:
    return HorizonRun(
        held=held, committed=100, delivered=100, seconds=10.0, throughput=throughput,
        p50_ms=1.0, p99_ms=2.0, claim_p99_ms=claim_p99_ms, event_claim_p99_ms=None,
        wal_bytes_per_message=1.0,
        peak_dead={}, peak_size={}, reclaimed_after=reclaimed,
        reclaimed_by_table={} if reclaimed is None else {"outbox.messages": reclaimed},
        samples=(), p99_by_window=(),
        events=None, claims_per_code=1.0, claims_per_event=None,
        consumer_claims_per_event=None, server_ms_per_claim={"codes": 1.0},
    )  # fmt: skip


def test_each_check_holds_the_held_run_to_its_target_against_the_clean_one():
    clean = _run(held=False, throughput=300.0, claim_p99_ms=5.0, reclaimed=None)
    within = _run(held=True, throughput=270.0, claim_p99_ms=10.0, reclaimed=60.0)
    beyond = _run(held=True, throughput=269.0, claim_p99_ms=10.5, reclaimed=None)

    met = {check.key: check.met for check in checks(clean, within)}
    missed = {check.key: (check.value, check.met) for check in checks(beyond, beyond)}
    against_clean = {
        check.key: (round(check.value, 3), check.met) for check in checks(clean, beyond)
    }

    # Without tenant events there is no events check.
    assert {"throughput": True, "claim_p99_ms": True, "lost": True, "reclaimed_after": True} == met
    assert (0.897, False) == against_clean["throughput"]
    assert (2.1, False) == against_clean["claim_p99_ms"]
    assert (float("inf"), False) == missed["reclaimed_after"]  # never reclaimed within the wait


async def test_the_reclaim_is_watched_on_every_table_whose_dead_rows_rose_in_the_hold():
    hold = HeldHorizon(
        database=Database(name="unused", conninfo="dbname=unused"),
        keyring="unused",
        rate=1,
        seconds=10,
        hold=(10.0, 20.0),
        sample_every=0.01,
        reclaim_wait=0.05,
    )

    def at(second: float, messages: int, records: int) -> Sample:
        dead = {"outbox.messages": messages, "events.outbox_records": records,
                "outbox.attempts": 0}  # fmt: skip
        return Sample(at=second, dead=dead, size={}, wal=0)

    # Before the hold the load keeps 100 dead messages; they rise to 1,100 in it. 190 is back
    # within a tenth of that rise (at 30 s); the records rise too and are never reclaimed.
    samples = [at(5, 100, 0), at(10, 100, 0), at(20, 1_100, 500), at(25, 300, 500),
               at(30, 190, 480)]  # fmt: skip

    reclaimed = await hold._reclaimed(samples, hold_end=20.0)

    assert {"outbox.messages": 10.0, "events.outbox_records": None} == reclaimed
