"""``outboxctl doctor``: is the outbox a good citizen of its database right now?"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Annotated

import typer

from outbox.domain.operator.doctor import Thresholds
from outbox.entrypoints.cli.exit_codes import ExitCode
from outbox.entrypoints.cli.guard import run_guarded
from outbox.entrypoints.cli.options import AsJson
from outbox.entrypoints.cli.output import print_json, print_table, table
from outbox.entrypoints.cli.startup import start
from outbox.entrypoints.wire.doctor import HealthView


def doctor(
    horizon: Annotated[
        float,
        typer.Option(
            "--horizon-seconds",
            min=1,
            help="A transaction open this long is named as holding the xmin horizon.",
        ),
    ] = 300,
    lag: Annotated[
        float,
        typer.Option(
            "--due-seconds",
            min=1,
            help="A lane whose oldest due item waited this long is named as behind.",
        ),
    ] = 60,
    as_json: AsJson = False,
) -> None:
    """Sessions holding the xmin horizon, autovacuum off or behind, the hot tables' dead rows
    and size, each lane's oldest due item, lagging consumers, a stalled relay and replication
    slots holding WAL, each with what to do. Exits 8 when anything needs doing.

    Run it with the migrator's login (a superuser or a member of pg_read_all_stats sees
    every session).
    """
    settings = start()
    thresholds = Thresholds(horizon=timedelta(seconds=horizon), lane_due=timedelta(seconds=lag))
    from outbox.entrypoints.bootstrap.doctor import check_health  # noqa: PLC0415 - only this command loads it

    report = run_guarded(lambda: asyncio.run(check_health(settings, thresholds)))
    if as_json:
        print_json(HealthView.of(report))
    elif report.healthy:
        typer.echo("healthy: nothing holds the horizon, nothing is behind")
    else:
        rows = table("severity", "check", "subject", "what it shows", "what to do", words=(0, 1))
        for finding in report.findings:
            rows.add_row(
                finding.severity.value,
                finding.check,
                finding.subject,
                finding.figure,
                finding.advice,
            )
        print_table(rows)
    if not report.healthy:
        raise typer.Exit(ExitCode.UNHEALTHY)
