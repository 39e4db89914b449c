"""The benchmark's chart: one bar per targeted check, coloured and labelled by its verdict.

The chart writer is fed a small run document built from real ``Results`` (no database):
two ratio checks (one met, one missed), two limit checks (one met, one missed) and one
check for information only, which has no target and so no bar.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from bench.chart import MET, MISSED, TIMES, write_chart
from bench.harness import Figure, Results
from bench.report import document

SVG = "{http://www.w3.org/2000/svg}"


def _figure(key: str, unit: str, *samples: float) -> Figure:
    return Figure(key=key, label=key, unit=unit, samples=samples, settings={"n": 1})


def _run() -> dict[str, object]:
    results = Results()
    for figure in (
        _figure("drain.ours", "msg/s", 6_000, 6_200, 5_900),
        _figure("drain.peer", "msg/s", 4_000, 4_100, 3_900),
        _figure("drain.ceiling", "msg/s", 15_000, 16_000, 14_000),
        _figure("latency.p99", "ms", 12.5, 14.0, 13.0),
        _figure("latency.flood_p99", "ms", 180.0, 210.0, 190.0),
    ):
        results.add(figure)
    results.ratio("ours_vs_peer", "Ours / peer", "drain.ours", "drain.peer", at_least=1.5)
    results.ratio(
        "ours_vs_ceiling",
        "Ours / ceiling (target: at least 0.5)",
        "drain.ours",
        "drain.ceiling",
        at_least=0.5,
    )
    results.ratio("peer_vs_ceiling", "Peer / ceiling", "drain.peer", "drain.ceiling", at_least=None)
    results.limit("latency_p99", "Latency p99", "latency.p99", at_most=25.0)
    results.limit("flood_p99", "Flood p99", "latency.flood_p99", at_most=50.0)
    header: dict[str, object] = {
        "mode": "full",
        "started_at": "2026-12-01T18:30:00+00:00",
        "groups": ["drain", "latency"],
        "repetitions": 3,
        "machine": {"cores": 2, "cpu": "AMD EPYC", "memory_gib": 24, "postgresql": "18.6"},
        "seconds": 12.5,
        "load_average_before": [6.2, 5.0, 4.0],
        "load_average_after": [5.1, 5.0, 4.0],
    }
    return document(results, header)


def _parse(path: Path) -> ET.Element:
    """The chart as XML: well-formed, or this raises (our own file, not untrusted input)."""
    return ET.parse(path).getroot()  # noqa: S314


def _bars(svg: ET.Element) -> dict[str, tuple[str, ET.Element]]:
    return {
        match.group(2): (match.group(1), group)
        for group in svg.iter(f"{SVG}g")
        if (match := re.fullmatch(r"bar-(met|missed)-(.+)", group.get("id", "")))
    }


def test_chart_draws_one_bar_per_targeted_check_coloured_by_its_verdict(
    tmp_path: Path,
) -> None:
    path = tmp_path / "chart.svg"
    write_chart(path, _run())
    svg = _parse(path)
    assert f"{SVG}svg" == svg.tag
    bars = _bars(svg)
    assert {"ours_vs_peer", "ours_vs_ceiling", "latency_p99", "flood_p99"} == set(bars)
    verdicts = {key: verdict for key, (verdict, _) in bars.items()}
    # 1.5x: 6,000 / 4,000 = 1.5 meets ≥ 1.5; 6,000 / 15,000 = 0.4 misses ≥ 0.5;
    # 13 ms meets ≤ 25 ms; 190 ms misses ≤ 50 ms.
    assert {
        "ours_vs_peer": "met",
        "ours_vs_ceiling": "missed",
        "latency_p99": "met",
        "flood_p99": "missed",
    } == verdicts
    for verdict, group in bars.values():
        colour = MET if verdict == "met" else MISSED
        assert colour.lower() in ET.tostring(group, encoding="unicode").lower()
    targets = [g for g in svg.iter(f"{SVG}g") if g.get("id", "").startswith("target-")]
    assert len(bars) == len(targets)


def test_chart_labels_each_bar_with_its_figures_and_the_run_caption(tmp_path: Path) -> None:
    path = tmp_path / "chart.svg"
    write_chart(path, _run())
    text = " ".join("".join(node.itertext()) for node in _parse(path).iter(f"{SVG}text"))
    assert f"1.50{TIMES} (target ≥ 1.50{TIMES}, met): 6,000 vs 4,000 msg/s" in text
    assert f"0.40{TIMES} (target ≥ 0.50{TIMES}, missed): 6,000 vs 15,000 msg/s" in text
    assert "190 ms (limit ≤ 50.00 ms, missed)" in text
    assert "Ours / ceiling" in text
    assert "target: at least" not in text  # the target is in the words beside the bar
    assert "Peer / ceiling" not in text  # information only: no target, no bar
    assert "2026-12-01T18:30:00+00:00" in text
    assert "AMD EPYC" in text
    assert "shared with other work" in text  # load 6.2 on 2 cores


def test_chart_has_no_nan_or_infinity_and_is_the_same_bytes_each_time(tmp_path: Path) -> None:
    first, second = tmp_path / "a.svg", tmp_path / "b.svg"
    write_chart(first, _run())
    write_chart(second, _run())
    content = first.read_text()
    assert not re.search(r"\b(nan|inf|infinity)\b", content, re.IGNORECASE)
    numbers = re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", content)
    assert numbers
    assert all(math.isfinite(float(n)) for n in numbers)
    assert first.read_bytes() == second.read_bytes()


def test_chart_refuses_a_check_that_is_not_a_finite_number(tmp_path: Path) -> None:
    run = _run()
    checks = run["checks"]
    assert isinstance(checks, dict)
    checks["ours_vs_peer"]["value"] = math.inf
    with pytest.raises(ValueError, match="ours_vs_peer"):
        write_chart(tmp_path / "chart.svg", run)
    assert not (tmp_path / "chart.svg").exists()


def test_a_quiet_start_is_not_called_shared_for_the_load_the_run_made_itself(
    tmp_path: Path,
) -> None:
    path = tmp_path / "chart.svg"
    write_chart(path, {**_run(), "load_average_before": [0.0, 0.7, 1.8]})  # after: 5.1
    text = " ".join("".join(node.itertext()) for node in _parse(path).iter(f"{SVG}text"))

    assert "Load average 0.0 before, 5.1 after." in text
    assert "shared with other work" not in text
