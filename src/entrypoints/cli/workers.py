"""``outboxctl workers``: which worker processes run which lanes, since when, with what lag."""

from __future__ import annotations

import typer

from outbox.entrypoints.cli.operator_run import run_operator
from outbox.entrypoints.cli.options import AsJson
from outbox.entrypoints.cli.output import lines, print_json, print_table, short_time, table
from outbox.entrypoints.wire.workers import WorkersView


def workers(as_json: AsJson = False) -> None:
    """Every lane of every worker process seen in the last day, running ones first: the
    process (host:pid), since when, when it last said it runs, and how long the lane's oldest
    due work has waited. A lane is gone once it stopped or went quiet for 30 s."""
    rows = run_operator(lambda services: services.workers.workers(actor=None))
    if as_json:
        print_json(WorkersView.of(rows))
        return
    if not rows:
        typer.echo("no worker has run in the last day")
        return
    built = table("Process\nLane", "Since (UTC)\nLast seen", "State\nLag (s)", ids=1)
    for row in rows:
        lag = "" if row.lag is None else f"{row.lag.total_seconds():.1f}"
        built.add_row(
            lines(row.owner, row.lane),
            lines(short_time(row.started_at), short_time(row.seen_at)),
            lines("running" if row.running else "gone", lag),
        )
    print_table(built)
