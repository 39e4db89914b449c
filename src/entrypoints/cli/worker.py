"""``outboxctl worker`` and ``outboxctl sweep``: deliver messages and keep the queue tidy."""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated

import attrs
import typer

from outbox.entrypoints.cli.exit_codes import ExitCode
from outbox.entrypoints.cli.guard import fail, run_guarded
from outbox.entrypoints.cli.output import camel, print_json
from outbox.entrypoints.cli.startup import start
from outbox.entrypoints.settings.lanes import CONSUMERS, EVENTS, LANES, SECURITY, parse_lanes
from outbox.entrypoints.settings.tree import Settings

if TYPE_CHECKING:
    from outbox.entrypoints.bootstrap.preflight import Needs


class SweepKind(enum.StrEnum):
    """Which sweep to run."""

    EXPIRY = "expiry"
    RETENTION = "retention"
    ALL = "all"


def worker_needs(lanes: Sequence[str]) -> Needs:
    """What a worker of ``lanes`` reaches: the worker's login for the security and events
    lanes, the consumers' for theirs; the seal keys for the security lane."""
    from outbox.entrypoints.bootstrap.preflight import Needs  # noqa: PLC0415 - only this command loads it

    databases: tuple[str, ...] = ("WORKER_DATABASE_URL",) if {SECURITY, EVENTS} & set(lanes) else ()
    if CONSUMERS in lanes:
        databases += ("CONSUMERS_DATABASE_URL",)
    return Needs(databases=databases, seal_keys=SECURITY in lanes)


def _settings(*, providers: bool) -> Settings:
    return start(providers=providers)


def worker(
    *,
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
    lanes: Annotated[
        str | None,
        typer.Option(
            help=f"Comma-separated lanes to run, of {', '.join(LANES)}"
            " (default OUTBOX_WORKER_LANES: all)."
        ),
    ] = None,
    processes: Annotated[
        int,
        typer.Option(
            min=1,
            help="Worker processes to run under one supervisor (one per core; default 1).",
        ),
    ] = 1,
    lane_processes: Annotated[
        bool,
        typer.Option(
            "--lane-processes",
            help="Each lane in worker processes of its own (--processes of each), and the"
            " security lane's reserved slot in one more, so that no load takes the event loop"
            " from a code.",
        ),
    ] = False,
) -> None:
    """Claim due work lane by lane, publish or send it, and record the outcomes.

    Each lane is one outbox with its own batches, pool and wake-up: security (one-time
    codes, links, notifications through their providers) and events (tenant business
    events). --concurrency and --batch-size size the security lane.

    With --drain, prints each lane's totals as JSON ({"security": {claimed, published,
    retried, released, deadLettered, leaseLost, unrecorded}, …}) when nothing is left due.

    SIGTERM or SIGINT stops claiming, lets the batches in flight finish within
    OUTBOX_WORKER_SHUTDOWN_GRACE_SECONDS, records them and exits 0.

    --processes N starts N such workers and supervises them: signals are forwarded to each,
    a worker that dies is started again (or, if it died within 10 s of its start, the others
    are stopped and its exit code returned). With --drain the JSON sums the lanes over the
    processes and lists each one's under "processes" (its pid and lanes). With
    OUTBOX_WORKER_METRICS_PORT=P, process i listens on P + i.

    --lane-processes runs each lane in worker processes of its own under the supervisor
    (--processes of each), and the security lane's reserved slot (high priority only) in one
    more (OUTBOX_WORKER_RESERVED_SLOT=elsewhere and =only), instead of all on one event loop:
    a code then waits for the loop neither while the events lane publishes a backlog nor
    while the security lane's batches send a flood of notifications (docs/benchmarks.md).
    The batches leave a fresh code to that slot for OUTBOX_WORKER_SLOT_GRACE_SECONDS (0.1),
    then take it themselves, so a slot that is down strands nothing.
    """
    chosen: tuple[str, ...] | None = None
    if lanes is not None:
        try:
            chosen = parse_lanes(lanes)
        except ValueError as error:
            raise fail(f"--lanes: {error}", ExitCode.CONFIGURATION) from None
    # Only the security lane sends: a worker of tenant events alone needs no provider settings.
    settings = start(
        providers=lambda s: SECURITY in (chosen or s.worker.lanes),
        needs=lambda s: worker_needs(chosen or s.worker.lanes),
    )
    if chosen is not None:
        settings = attrs.evolve(settings, worker=attrs.evolve(settings.worker, lanes=chosen))
    apart = settings.worker.lanes if lane_processes and len(settings.worker.lanes) > 1 else None
    if processes > 1 or apart is not None:
        _supervise(
            settings,
            processes=processes,
            drain=drain,
            options=_child_options(
                drain=drain,
                concurrency=concurrency,
                batch_size=batch_size,
                lanes=None if apart is not None else lanes,
            ),
            lanes_apart=apart,
        )
        return
    # The worker's composition root (lanes, providers, templates, NATS) loads only when a
    # worker or sweep command runs: every other outboxctl command starts without it.
    from outbox.entrypoints.bootstrap.worker_process import run_worker  # noqa: PLC0415

    totals = run_guarded(
        lambda: asyncio.run(
            run_worker(settings, drain=drain, batch_size=batch_size, concurrency=concurrency)
        )
    )
    if drain:
        print_json(
            {
                lane: {camel(name): value for name, value in attrs.asdict(result).items()}
                for lane, result in totals.items()
            }
        )


def _child_options(
    *, drain: bool, concurrency: int | None, batch_size: int | None, lanes: str | None
) -> list[str]:
    """The options each supervised worker gets: the supervisor's own, --processes aside."""
    options = ["--drain"] if drain else []
    for name, value in (("--concurrency", concurrency), ("--batch-size", batch_size)):
        if value is not None:
            options += [name, str(value)]
    if lanes is not None:
        options += ["--lanes", lanes]
    return options


def _supervise(
    settings: Settings,
    *,
    processes: int,
    drain: bool,
    options: list[str],
    lanes_apart: Sequence[str] | None,
) -> None:
    """Run ``processes`` workers (of each lane in ``lanes_apart``) under a supervisor; exit
    with its code, print drain totals."""
    from outbox.entrypoints.bootstrap.worker_processes import (  # noqa: PLC0415 - as above
        supervise_workers,
    )

    returncode, totals = supervise_workers(
        settings, processes=processes, drain=drain, options=options, lanes_apart=lanes_apart
    )
    if returncode != 0:
        raise typer.Exit(returncode)
    if totals is not None:
        print_json(totals)


def sweep(
    kind: Annotated[SweepKind, typer.Argument(help="expiry, retention or all.")],
    loop: Annotated[
        bool, typer.Option("--loop", help="Keep sweeping on the configured intervals.")
    ] = False,
) -> None:
    """Expire unsent messages whose secret can no longer be used, and/or delete old final rows.

    Retention covers the tenant events too. Prints the counts as JSON (expiry, retention,
    eventsRetention).
    """
    settings = _settings(providers=False)
    from outbox.entrypoints.bootstrap.worker_process import run_sweeps  # noqa: PLC0415 - as above

    counts = run_guarded(lambda: asyncio.run(run_sweeps(settings, which=kind.value, loop=loop)))
    print_json({camel(name): count for name, count in counts.items()})
