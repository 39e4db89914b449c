"""Print a run's figures and checks as rich tables and write them as JSON."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path

from rich.console import Console
from rich.table import Table

from bench.harness import Check, Figure, Results


def document(results: Results, header: Mapping[str, object]) -> dict[str, object]:
    """Every figure and check with the run's header (mode, machine), as plain JSON values."""
    return {
        **header,
        "figures": {key: figure.as_json() for key, figure in results.figures.items()},
        "checks": {key: check.as_json() for key, check in results.checks.items()},
    }


def write_json(path: Path, results: Results, header: Mapping[str, object]) -> None:
    """Write ``document(results, header)`` to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document(results, header), indent=2) + "\n")


def markdown(results: Results, header: Mapping[str, object]) -> str:
    """The figures and checks as Markdown tables, to paste into docs/benchmarks.md."""
    lines = [
        "| figure | median | min | max | unit | n |",
        "|---|---:|---:|---:|---|---:|",
    ]
    lines += [
        f"| {f.label} | {_number(f.median)} | {_number(f.min)} | {_number(f.max)} "
        f"| {f.unit} | {len(f.samples)} |"
        for f in results.figures.values()
    ]
    lines += ["", "| check | value | target | met |", "|---|---:|---:|---|"]
    lines += [
        f"| {c.label} | {_value(c)} | {_target(c)} | "
        f"{'—' if c.met is None else ('yes' if c.met else '**no**')} |"
        for c in results.checks.values()
    ]
    facts = ", ".join(f"{k}: {v}" for k, v in header.items() if k != "machine")
    machine = header.get("machine")
    if isinstance(machine, Mapping):
        facts += "; " + ", ".join(f"{k}: {v}" for k, v in machine.items())
    return "\n".join([f"_{facts}_", "", *lines, ""])


def print_tables(console: Console, results: Results, header: Mapping[str, object]) -> None:
    """The figures table, then the checks table (each ratio computed in this run)."""
    console.print(", ".join(f"{key}: {value}" for key, value in header.items() if key != "machine"))
    machine = header.get("machine")
    if isinstance(machine, Mapping):
        console.print(", ".join(f"{key}: {value}" for key, value in machine.items()))
    figures = Table(title="Figures (median of the repetitions, with min and max)")
    for column in ("figure", "median", "min", "max", "unit", "n"):
        figures.add_column(column, justify="left" if column == "figure" else "right")
    for figure in results.figures.values():
        figures.add_row(
            figure.label,
            _number(figure.median),
            _number(figure.min),
            _number(figure.max),
            figure.unit,
            str(len(figure.samples)),
        )
    console.print(figures)
    console.print(checks_table(results.checks.values(), "Targets, computed from the medians above"))


def checks_table(checks: Iterable[Check], title: str) -> Table:
    """The checks, each with its value, its target and whether it is met."""
    table = Table(title=title)
    for column in ("check", "value", "target", "met"):
        table.add_column(column, justify="left" if column == "check" else "right")
    for check in checks:
        table.add_row(check.label, _value(check), _target(check), _met(check.met))
    return table


def print_settings(console: Console, figures: Mapping[str, Figure]) -> None:
    """The settings each figure was measured with (batch sizes, concurrency, sizes)."""
    table = Table(title="Settings")
    table.add_column("figure")
    table.add_column("settings")
    for figure in figures.values():
        table.add_row(figure.key, ", ".join(f"{k}={v}" for k, v in figure.settings.items()))
    console.print(table)


def _number(value: float) -> str:
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:,.2f}"


def _value(check: Check) -> str:
    if not math.isfinite(check.value):
        return "never"
    if check.unit == "x":
        return f"{check.value:.2f}x"
    return f"{_number(check.value)} {check.unit}"


def _met(met: bool | None) -> str:
    if met is None:
        return "—"
    return "[green]yes[/green]" if met else "[red]NO[/red]"


def _target(check: Check) -> str:
    if check.target is None:
        return "(information)"
    sign = "≥" if check.direction == "at_least" else "≤"
    if check.unit == "x":
        return f"{sign} {check.target:.2f}x"
    return f"{sign} {_number(check.target)} {check.unit}"
