"""The benchmark's smoke mode runs end to end and reports every figure and check.

Timings are never asserted: only that each figure was measured and each ratio computed.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from tests import postgres_server as servers

# Every group's tiny run is one subprocess of up to 480 s (below); the default per-test limit
# of 300 s would cut it short on a busy machine before its own timeout can say so.
pytestmark = pytest.mark.timeout(600)

REPO = Path(__file__).resolve().parents[2]
FIGURES = {
    "drain.pgqueuer",
    "drain.sql_ceiling",
    "drain.dispatch_plain",
    "drain.dispatch_sealed",
    "drain.cpu_pgqueuer",
    "drain.cpu_sql_ceiling",
    "drain.cpu_dispatch_plain",
    "drain.cpu_dispatch_sealed",
    "wal.pgqueuer",
    "wal.sql_ceiling",
    "wal.dispatch_plain",
    "wal.dispatch_sealed",
    "wal.events_pgqueuer",
    "wal.events_sql_ceiling",
    "wal.events_lane",
    "wal.events_sql_ceiling_no_consumer",
    "xacts.pgqueuer",
    "xacts.sql_ceiling",
    "xacts.dispatch_plain",
    "xacts.dispatch_sealed",
    "xacts.events_pgqueuer",
    "xacts.events_sql_ceiling",
    "xacts.events_lane",
    "xacts.events_sql_ceiling_no_consumer",
    "wal.consumers_sql_ceiling",
    "wal.consumers_runner",
    "xacts.consumers_sql_ceiling",
    "xacts.consumers_runner",
    "enqueue.plain_insert",
    "enqueue.sealed",
    "enqueue.sealed_no_notify",
    "latency.offered_rate",
    "latency.p50",
    "latency.p95",
    "latency.p99",
    "latency.flood_p50",
    "latency.flood_p95",
    "latency.flood_p99",
    "latency.flood_in_line_p99",
    "latency.flood_unreserved_p99",
    "latency.flood_left",
    "latency.events_flood_p50",
    "latency.events_flood_p95",
    "latency.events_flood_p99",
    "latency.events_left",
    "latency.events_appended",
    "latency.flood_apart_p50",
    "latency.flood_apart_p95",
    "latency.flood_apart_p99",
    "latency.events_apart_p50",
    "latency.events_apart_p95",
    "latency.events_apart_p99",
    "latency.events_flood_offered_rate",
    "latency.events_apart_offered_rate",
    "backlog.small",
    "backlog.large",
    "backlog.cpu_small",
    "backlog.cpu_large",
    "backlog.full_drain_process",
    "memory.worker_peak_rss",
    "events_append.plain_insert",
    "events_append.append",
    "events_append.append_no_notify",
    "events_drain.pgqueuer",
    "events_drain.sql_ceiling",
    "events_drain.lane",
    "events_drain.cpu_pgqueuer",
    "events_drain.cpu_sql_ceiling",
    "events_drain.cpu_lane",
    "events_drain.sql_ceiling_no_consumer",
    "events_drain.cpu_sql_ceiling_no_consumer",
    "consumers.sql_ceiling",
    "consumers.runner",
    "consumers.cpu_sql_ceiling",
    "consumers.cpu_runner",
    "processes.pgqueuer",
    "processes.notification_1",
    "processes.notification_2",
    "processes.sealed_code_1",
    "processes.sealed_code_2",
    "relay.lane",
    "relay.bare_publish",
    "relay.cpu_lane",
    "relay.cpu_bare_publish",
    "relay.end_to_end_p50",
    "relay.end_to_end_p95",
    "relay.end_to_end_p99",
    "relay.append_to_puback_p50",
    "relay.append_to_puback_p95",
    "relay.append_to_puback_p99",
}
PROCESS_CHECKS = {
    "processes_plain_2_vs_1",
    "processes_plain_1_vs_pgqueuer",
    "processes_plain_2_vs_pgqueuer",
    "processes_sealed_2_vs_1",
    "processes_sealed_1_vs_pgqueuer",
    "processes_sealed_2_vs_pgqueuer",
}
CHECKS = {
    "dispatch_plain_vs_pgqueuer",
    "dispatch_sealed_vs_pgqueuer",
    "dispatch_plain_vs_ceiling",
    "dispatch_sealed_vs_ceiling",
    "ceiling_vs_pgqueuer",
    "cpu_pgqueuer_vs_plain",
    "cpu_pgqueuer_vs_sealed",
    "enqueue_vs_insert",
    "notify_cost",
    "latency_p99",
    "latency_flood_p99",
    "latency_flood_reserved_vs_not",
    "latency_events_flood_p99",
    "latency_events_flood_vs_idle",
    "latency_events_apart_p99",
    "latency_events_apart_vs_together",
    "latency_flood_apart_p99",
    "latency_flood_apart_vs_together",
    "backlog_large_vs_small",
    "worker_peak_rss",
    "events_append_vs_insert",
    "events_append_notify_cost",
    "events_lane_vs_pgqueuer",
    "events_lane_vs_ceiling",
    "events_fan_out_cost",
    "consumer_vs_ceiling",
    "consumer_vs_pgqueuer",
    "relay_vs_bare_publish",
    "wal_dispatch_plain_vs_pgqueuer",
    "wal_dispatch_sealed_vs_pgqueuer",
    "wal_sql_ceiling_vs_pgqueuer",
    "wal_events_lane_vs_pgqueuer",
    "wal_events_sql_ceiling_vs_pgqueuer",
    "xacts_dispatch_plain_vs_pgqueuer",
    "xacts_dispatch_sealed_vs_pgqueuer",
    "xacts_sql_ceiling_vs_pgqueuer",
    "xacts_events_lane_vs_pgqueuer",
    "xacts_events_sql_ceiling_vs_pgqueuer",
    "wal_consumers_runner_vs_pgqueuer",
    "wal_consumers_sql_ceiling_vs_pgqueuer",
    "xacts_consumers_runner_vs_pgqueuer",
    "xacts_consumers_sql_ceiling_vs_pgqueuer",
    *PROCESS_CHECKS,
}
TARGETED = (
    CHECKS
    - PROCESS_CHECKS
    - {
        "ceiling_vs_pgqueuer",
        "wal_dispatch_plain_vs_pgqueuer",
        "wal_dispatch_sealed_vs_pgqueuer",
        "wal_sql_ceiling_vs_pgqueuer",
        "wal_events_lane_vs_pgqueuer",
        "wal_events_sql_ceiling_vs_pgqueuer",
        "xacts_dispatch_plain_vs_pgqueuer",
        "xacts_dispatch_sealed_vs_pgqueuer",
        "xacts_sql_ceiling_vs_pgqueuer",
        "xacts_events_lane_vs_pgqueuer",
        "xacts_events_sql_ceiling_vs_pgqueuer",
        "wal_consumers_runner_vs_pgqueuer",
        "wal_consumers_sql_ceiling_vs_pgqueuer",
        "xacts_consumers_runner_vs_pgqueuer",
        "xacts_consumers_sql_ceiling_vs_pgqueuer",
        "latency_events_apart_vs_together",
        "latency_flood_apart_vs_together",
        "cpu_pgqueuer_vs_plain",
        "cpu_pgqueuer_vs_sealed",
        "notify_cost",
        "events_append_notify_cost",
        "latency_events_flood_vs_idle",
        "latency_flood_reserved_vs_not",
        "events_lane_vs_ceiling",
        "events_fan_out_cost",
    }
)


@pytest.fixture(scope="module")
def smoke_results(
    tmp_path_factory: pytest.TempPathFactory, postgres_server: servers.TestServer
) -> dict[str, object]:
    """Run ``python -m bench --smoke`` once, on the tests' own server (no durability: the
    smoke run proves the figures are measured and reported, not how fast they are)."""
    out = tmp_path_factory.mktemp("bench") / "smoke.json"
    chart = out.with_suffix(".svg")
    env = {**os.environ, "OUTBOX_DATABASE_URL": postgres_server.admin_url}
    completed = subprocess.run(
        [sys.executable, "-m", "bench", "--smoke", "--out", str(out), "--chart", str(chart)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=480,  # the shared development machine runs it under heavy load
        check=False,
    )
    assert 0 == completed.returncode, completed.stdout[-3000:] + completed.stderr[-3000:]
    document: dict[str, object] = json.loads(out.read_text())
    document["chart"] = ET.parse(chart).getroot()  # noqa: S314 (the run's own chart)
    return document


# Figures that count rows rather than time them: zero is a true reading (the worker may
# clear the whole flood before the last code is committed on a quiet machine).
COUNTS = {"latency.flood_left", "latency.events_left"}
# Latencies from the producer's COMMIT returning: a reserved slot with a process to itself
# may send a code before the producer hears of its commit, so at or below zero is true too.
APART = {f"latency.{kind}_apart_{p}" for kind in ("flood", "events") for p in ("p50", "p95", "p99")}


@pytest.mark.integration
def test_smoke_run_reports_every_figure_with_its_samples(smoke_results: dict[str, object]) -> None:
    figures = smoke_results["figures"]
    assert isinstance(figures, dict)
    assert FIGURES == set(figures)
    for key, figure in figures.items():
        samples = figure["samples"]
        assert samples, key
        least = -math.inf if key in APART else 0 if key in COUNTS else math.nextafter(0, 1)
        assert all(math.isfinite(value) and value >= least for value in samples), key
        assert min(samples) == figure["min"]
        assert max(samples) == figure["max"]
        assert figure["min"] <= figure["median"] <= figure["max"], key
        assert figure["unit"], key
        assert figure["settings"], key


@pytest.mark.integration
def test_smoke_run_repeats_every_repeated_figure(smoke_results: dict[str, object]) -> None:
    figures = smoke_results["figures"]
    assert isinstance(figures, dict)
    single = {"backlog.full_drain_process", "memory.worker_peak_rss"}
    for key in FIGURES - single:
        assert smoke_results["repetitions"] == len(figures[key]["samples"]), key


@pytest.mark.integration
def test_smoke_run_computes_every_ratio_from_the_same_run(
    smoke_results: dict[str, object],
) -> None:
    figures = smoke_results["figures"]
    checks = smoke_results["checks"]
    assert isinstance(figures, dict)
    assert isinstance(checks, dict)
    assert CHECKS == set(checks)
    for key, check in checks.items():
        numerator = figures[check["numerator"]]["median"]
        if check["denominator"] is None:
            assert numerator == check["value"], key
        else:
            assert math.isclose(
                numerator / figures[check["denominator"]]["median"], check["value"]
            ), key
        assert (check["target"] is not None) == (key in TARGETED), key
        assert isinstance(check["met"], bool) == (key in TARGETED), key


@pytest.mark.integration
def test_smoke_run_draws_a_bar_for_every_targeted_check(smoke_results: dict[str, object]) -> None:
    chart = smoke_results["chart"]
    assert isinstance(chart, ET.Element)
    checks = smoke_results["checks"]
    assert isinstance(checks, dict)
    drawn = {
        group.get("id", "").split("-", 2)[2]: group.get("id", "").split("-", 2)[1]
        for group in chart.iter("{http://www.w3.org/2000/svg}g")
        if group.get("id", "").startswith("bar-")
    }
    assert {key: ("met" if checks[key]["met"] else "missed") for key in TARGETED} == drawn


@pytest.mark.integration
def test_smoke_run_describes_the_machine_and_database(smoke_results: dict[str, object]) -> None:
    machine = smoke_results["machine"]
    assert isinstance(machine, dict)
    assert machine["cores"] >= 1
    assert machine["postgresql"]
    assert "smoke" == smoke_results["mode"]
