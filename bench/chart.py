"""The run's checks as an SVG bar chart: each check's ratio against its target.

One horizontal bar per check that has a target. A ratio check (ours / a peer or a ceiling)
is drawn as that ratio; a limit check (a latency or a memory figure held under a limit) as
ours / the limit, so every row shares one logarithmic axis of multiples. The target is a
black mark on each row; met bars are green, missed ones orange, and the words above each
bar say the same with the two figures it came from. The caption names the machine, the
date and the load average, read from the run's JSON document (``report.document``).

``python -m bench.chart bench-results/latest.json docs/images/benchmarks.svg`` redraws a
saved run without measuring again.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import matplotlib as mpl
from matplotlib.figure import Figure as PlotFigure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

TIMES = "\N{MULTIPLICATION SIGN}"
MET = "#2e7d32"
MISSED = "#e8590c"
TARGET = "#212529"
GRID = "#dee2e6"
# The words beside a bar, a shade darker than the bar so that they read on white.
TEXT = {True: "#1b5e20", False: "#c2410c"}
_TARGET_SUFFIX = re.compile(r"\s*\(target[^)]*\)$")
# Fixed so that the same document always gives the same bytes (ids, no timestamp).
_RC: dict[Any, Any] = {
    "svg.hashsalt": "outbox-bench",
    "svg.fonttype": "none",  # text stays text: small, selectable, drawn in the page's font
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Helvetica", "Arial"],
    "font.size": 10,
}


@attrs.frozen(kw_only=True)
class Bar:
    """One check as drawn: its position against the target and the words beside it."""

    key: str
    label: str
    position: float  # value for a ratio, value / limit for a limit (the target is then 1)
    target: float
    met: bool
    text: str


def bars(document: Mapping[str, object]) -> list[Bar]:
    """The targeted checks of a run's document, in the order they were computed."""
    checks = _mapping(document.get("checks", {}))
    figures = _mapping(document.get("figures", {}))
    drawn = []
    for key, raw in checks.items():
        check = _mapping(raw)
        if check.get("target") is None:
            continue  # reported for information only: the tables have it
        value, target = _finite(check["value"], key), _finite(check["target"], key)
        if target <= 0 or value <= 0:
            raise ValueError(f"check {key}: value and target must be positive")
        at_least = check["direction"] == "at_least"
        met = value >= target if at_least else value <= target
        sign = "≥" if at_least else "≤"
        verdict = "met" if met else "missed"
        numerator = _mapping(figures[str(check["numerator"])])
        if check["unit"] == "x":
            denominator = _mapping(figures[str(check["denominator"])])
            text = (
                f"{value:.2f}{TIMES} (target {sign} {target:.2f}{TIMES}, {verdict}): "
                f"{_number(_finite(numerator['median'], key))} vs "
                f"{_number(_finite(denominator['median'], key))} {numerator['unit']}"
            )
            position, mark = value, target
        else:
            unit = str(check["unit"])
            text = f"{_number(value)} {unit} (limit {sign} {_number(target)} {unit}, {verdict})"
            position, mark = value / target, 1.0
        drawn.append(
            Bar(
                key=str(key),
                label=_TARGET_SUFFIX.sub("", str(check["label"])),
                position=position,
                target=mark,
                met=met,
                text=text,
            )
        )
    return drawn


def write_chart(path: Path, document: Mapping[str, object]) -> None:
    """Draw the targeted checks of ``document`` (see ``report.document``) as SVG at ``path``."""
    drawn = bars(document)
    if not drawn:
        raise ValueError("the run computed no check with a target: nothing to draw")
    with mpl.rc_context(_RC):
        figure = _draw(drawn, caption(document))
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, format="svg", bbox_inches="tight", metadata={"Date": None})


def caption(document: Mapping[str, object]) -> str:
    """When, how and on what the run measured, for the line under the chart."""
    machine = _mapping(document.get("machine", {}))
    groups = document.get("groups", [])
    group_list = ", ".join(str(g) for g in groups) if isinstance(groups, list) else ""
    load = [document.get("load_average_before"), document.get("load_average_after")]
    first = [x[0] for x in load if isinstance(x, list) and x]
    cores = machine.get("cores", 0)
    lines = [
        (
            f"Run of {document.get('started_at', '?')} ({document.get('mode', '?')} sizes, "
            f"{document.get('repetitions', '?')} repetition(s), groups: {group_list})."
        ),
        (
            f"{cores} cores, {machine.get('cpu', '?')}, {machine.get('memory_gib', '?')} GiB, "
            f"Linux {machine.get('kernel', '?')}, Python {machine.get('python', '?')}, "
            f"PostgreSQL {machine.get('postgresql', '?')} "
            f"({machine.get('postgresql_server', '?')})."
        ),
    ]
    if first:
        # The load before the run says whether something else ran: the run itself raises
        # the load after it, alone on the machine too.
        before = load[0]
        busy = isinstance(cores, int) and isinstance(before, list) and before[0] > cores
        lines.append(
            "Load average "
            + " before, ".join(f"{x:.1f}" for x in first)
            + (" after" if len(first) > 1 else "")
            + (
                ": the machine was shared with other work, so wall-clock rates are noisy."
                if busy
                else "."
            )
        )
    return "\n".join(lines)


def _draw(drawn: list[Bar], note: str) -> PlotFigure:
    rows = len(drawn)
    # 8.5 in of SVG points is about the width of a GitHub page: drawn at its own size there.
    figure = PlotFigure(figsize=(8.5, 0.56 * rows + 1.6))
    axes = figure.add_axes((0.0, 0.0, 1.0, 1.0))
    positions = [bar.position for bar in drawn] + [bar.target for bar in drawn]
    low = min(0.1, min(positions) / 1.5)
    high = max(4.0, max(positions) * 1.5)
    axes.set_xscale("log")
    axes.set_xlim(low, high)
    axes.set_ylim(rows - 0.55, -0.95)
    ticks = [t for t in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100) if low <= t <= high]
    axes.set_xticks(ticks, [f"{t:g}{TIMES}" for t in ticks])
    axes.minorticks_off()
    axes.set_yticks([])
    axes.tick_params(axis="x", colors="#495057", labelsize=9)
    axes.grid(axis="x", color=GRID, linewidth=0.8)
    axes.set_axisbelow(True)
    for side in ("top", "right", "left"):
        axes.spines[side].set_visible(False)
    axes.spines["bottom"].set_color("#adb5bd")
    for row, bar in enumerate(drawn):
        colour = MET if bar.met else MISSED
        axes.barh(
            row,
            bar.position - low,
            left=low,
            height=0.36,
            color=colour,
            gid=f"bar-{'met' if bar.met else 'missed'}-{bar.key}",
        )
        axes.plot(
            [bar.target, bar.target],
            [row - 0.21, row + 0.21],
            color=TARGET,
            linewidth=2.4,
            solid_capstyle="butt",
            gid=f"target-{bar.key}",
        )
        above = (0.0, row - 0.24)
        axes.annotate(
            bar.label,
            xy=above,
            xycoords=("axes fraction", "data"),
            va="bottom",
            fontsize=9.5,
            fontweight="bold",
            color="#212529",
        )
        axes.annotate(
            bar.text,
            xy=(1.0, above[1]),
            xycoords=("axes fraction", "data"),
            ha="right",
            va="bottom",
            fontsize=9,
            color=TEXT[bar.met],
        )
    axes.legend(
        handles=[
            Patch(color=MET, label="met"),
            Patch(color=MISSED, label="missed"),
            Line2D([], [], color=TARGET, linewidth=2.4, label="target"),
        ],
        loc="lower right",
        bbox_to_anchor=(1.0, 1.0),
        ncols=3,
        frameon=False,
        fontsize=9,
        handlelength=1.2,
    )
    axes.set_xlabel(
        "ours \N{DIVISION SIGN} the peer or ceiling; a latency or memory figure: "
        "ours \N{DIVISION SIGN} its limit (log scale)",
        fontsize=9,
        color="#495057",
    )
    axes.set_title(
        "Targets, this run",
        loc="left",
        fontsize=12.5,
        fontweight="bold",
        pad=10,
    )
    axes.annotate(
        note,
        xy=(0.0, 0.0),
        xycoords="axes fraction",
        xytext=(0, -40),
        textcoords="offset points",
        va="top",
        fontsize=8,
        color="#495057",
        linespacing=1.5,
    )
    return figure


def _mapping(value: object) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise TypeError(f"expected a JSON object, got {type(value).__name__}")
    return value


def _finite(value: object, key: object) -> float:
    if not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"check {key}: {value!r} is not a finite number")
    return float(value)


def _number(value: float) -> str:
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:,.2f}"


def main(argv: list[str]) -> None:
    """``python -m bench.chart RESULTS.json CHART.svg``: redraw a saved run's chart."""
    if len(argv) != 2:
        raise SystemExit("usage: python -m bench.chart RESULTS.json CHART.svg")
    write_chart(Path(argv[1]), json.loads(Path(argv[0]).read_text()))


if __name__ == "__main__":
    main(sys.argv[1:])
