"""``python -m bench``: the full benchmark (or ``--smoke``): tables, a JSON file, a chart."""

from __future__ import annotations

import asyncio
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import attrs
import typer
from rich.console import Console

from bench import machine
from bench.chart import write_chart
from bench.databases import database_server
from bench.plan import GROUPS, Plan
from bench.report import document, markdown, print_settings, print_tables, write_json
from bench.sizes import FULL, SMOKE

DEFAULT_OUT = Path("bench-results/latest.json")

app = typer.Typer(add_completion=False, pretty_exceptions_show_locals=False)


@app.command()
def main(
    smoke: Annotated[bool, typer.Option(help="Tiny sizes, to check that everything runs.")] = False,
    out: Annotated[Path, typer.Option(help="Where to write the JSON results.")] = DEFAULT_OUT,
    repetitions: Annotated[
        int | None, typer.Option(min=1, help="Repetitions per figure (default 5; smoke 2).")
    ] = None,
    only: Annotated[
        list[str] | None,
        typer.Option(help=f"Run only these groups: {', '.join(GROUPS)} (repeatable)."),
    ] = None,
    chart: Annotated[
        Path | None,
        typer.Option(
            help="Also draw the checks against their targets as an SVG bar chart at this path."
        ),
    ] = None,
) -> None:
    """Measure the outbox against pgqueuer and the SQL-only ceiling; print and save the figures.

    The database is an embedded PostgreSQL unless OUTBOX_DATABASE_URL names a server (a
    superuser URL: each measured system gets its own database there, dropped afterwards).
    """
    sizes = SMOKE if smoke else FULL
    if repetitions is not None:
        sizes = attrs.evolve(sizes, repetitions=repetitions)
    groups = tuple(only) if only else GROUPS
    unknown = set(groups) - set(GROUPS)
    if unknown:
        raise typer.BadParameter(f"unknown group(s): {', '.join(sorted(unknown))}")
    console = Console()
    started = time.monotonic()
    load_before = os.getloadavg()
    with database_server() as server:
        header: dict[str, object] = {
            "mode": "smoke" if smoke else "full",
            "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "groups": list(groups),
            "repetitions": sizes.repetitions,
            "machine": machine.describe(server.version(), server.kind),
        }
        results = asyncio.run(
            Plan(server=server, sizes=sizes, console=console, groups=groups).run()
        )
    header["seconds"] = round(time.monotonic() - started, 1)
    header["load_average_before"] = [round(x, 2) for x in load_before]
    header["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    write_json(out, results, header)
    out.with_suffix(".md").write_text(markdown(results, header))
    print_tables(console, results, header)
    print_settings(console, results.figures)
    console.print(f"JSON written to {out}, Markdown tables to {out.with_suffix('.md')}")
    if chart is not None:
        write_chart(chart, document(results, header))
        console.print(f"Chart written to {chart}")


if __name__ == "__main__":
    app()
