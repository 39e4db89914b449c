"""``outboxctl worker`` and ``outboxctl sweep``: deliver messages and keep the queue tidy."""

from __future__ import annotations

import asyncio
import enum
from typing import Annotated

import typer

from entrypoints.bootstrap.worker import run_sweeps, run_worker
from entrypoints.cli.guard import run_guarded
from entrypoints.cli.output import print_json
from entrypoints.cli.startup import start
from entrypoints.settings.tree import Settings


class SweepKind(enum.StrEnum):
    """Which sweep to run."""

    EXPIRY = "expiry"
    RETENTION = "retention"
    ALL = "all"


def _settings(*, providers: bool) -> Settings:
    return start(providers=providers)


def worker(
    drain: Annotated[
        bool, typer.Option("--drain", help="Exit once nothing is due (tests, cron, benchmarks).")
    ] = False,
    concurrency: Annotated[
        int | None,
        typer.Option(min=1, help="Messages sent at once (default OUTBOX_WORKER_CONCURRENCY)."),
    ] = None,
    batch_size: Annotated[
        int | None,
        typer.Option(min=1, help="Messages claimed per batch (default OUTBOX_WORKER_BATCH_SIZE)."),
    ] = None,
) -> None:
    """Claim due messages, send them through their providers and record the outcomes.

    With --drain, prints the totals as JSON (claimed, published, retried, released,
    deadLettered, leaseLost, unrecorded) when nothing is left due.

    SIGTERM or SIGINT stops claiming, lets the batch in flight finish within
    OUTBOX_WORKER_SHUTDOWN_GRACE_SECONDS, records it and exits 0.
    """
    settings = _settings(providers=True)
    totals = run_guarded(
        lambda: asyncio.run(
            run_worker(settings, drain=drain, batch_size=batch_size, concurrency=concurrency)
        )
    )
    if drain:
        print_json(
            {
                "claimed": totals.claimed,
                "published": totals.published,
                "retried": totals.retried,
                "released": totals.released,
                "deadLettered": totals.dead_lettered,
                "leaseLost": totals.lease_lost,
                "unrecorded": totals.unrecorded,
            }
        )


def sweep(
    kind: Annotated[SweepKind, typer.Argument(help="expiry, retention or all.")],
    loop: Annotated[
        bool, typer.Option("--loop", help="Keep sweeping on the configured intervals.")
    ] = False,
) -> None:
    """Expire unsent messages whose secret can no longer be used, and/or delete old final rows.

    Prints the counts as JSON.
    """
    settings = _settings(providers=False)
    counts = run_guarded(lambda: asyncio.run(run_sweeps(settings, which=kind.value, loop=loop)))
    print_json(counts)
