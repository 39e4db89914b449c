"""``outboxctl consume`` and ``outboxctl consumers list|lag|dead-letters|replay|pause|resume``:
run the consumers of tenant events, and operate them as the database operator."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Annotated, TypeVar

import attrs
import typer

from outbox.application.events.consumer_ports import ConsumerAdmin, ConsumerLag
from outbox.entrypoints.cli.exit_codes import ExitCode
from outbox.entrypoints.cli.guard import fail, run_guarded
from outbox.entrypoints.cli.operator_run import operator_guarded
from outbox.entrypoints.cli.options import AsJson
from outbox.entrypoints.cli.output import camel, lines, print_json, print_table, short_time, table
from outbox.entrypoints.cli.startup import start
from outbox.entrypoints.wire.consumers import ConsumerDeadLetterPageView, ConsumerLagsView

_T = TypeVar("_T")

consumers_app = typer.Typer(
    help="Operate the consumers of tenant events: lag, dead letters, replay, pause, resume.",
    no_args_is_help=True,
)

Consumer = Annotated[str, typer.Argument(help="The consumer's code (module.name).")]
WhyOption = Annotated[
    str | None,
    typer.Option("--reason", help="Why (kept in the consumer's audit: never personal data)."),
]
DEFAULT_LIMIT = 50
MAX_LIMIT = 1000


def consume(
    consumer: Annotated[
        list[str] | None,
        typer.Option("--consumer", help="A consumer to run (repeat it); default: every one."),
    ] = None,
    drain: Annotated[
        bool, typer.Option("--drain", help="Exit once no consumer has a delivery due.")
    ] = False,
) -> None:
    """Run consumers alone: claim their deliveries, run each handler and complete the delivery
    in the handler's transaction (a batch's handlers share one, each in a savepoint).

    With --drain, prints each consumer's totals as JSON ({"identity.security_notices":
    {claimed, completed, retried, deadLettered, leaseLost, unrecorded, paused}}) when nothing
    is due.
    SIGTERM or SIGINT stops claiming; the batch in flight finishes.
    """
    # The composition root of the consumers (handlers, templates, providers) loads only when
    # this command runs: every other outboxctl command starts without it.
    from outbox.entrypoints.bootstrap.consumers import (  # noqa: PLC0415
        UnknownConsumer,
        run_consumers,
        shipped_consumers,
    )

    settings = start()
    registry = shipped_consumers()
    try:
        totals = run_guarded(
            lambda: asyncio.run(
                run_consumers(settings, registry=registry, consumers=consumer or (), drain=drain)
            )
        )
    except UnknownConsumer as error:
        raise fail(f"--consumer: {error}", ExitCode.USAGE) from None
    if drain:
        print_json(
            {
                name: {camel(field): value for field, value in attrs.asdict(result).items()}
                for name, result in totals.items()
            }
        )


def _run(action: Callable[[ConsumerAdmin], Awaitable[_T]]) -> _T:
    from outbox.entrypoints.bootstrap.consumers import consumer_admin  # noqa: PLC0415 - as above

    settings = start()

    async def main() -> _T:
        async with consumer_admin(settings) as admin:
            return await action(admin)

    with operator_guarded():
        return asyncio.run(main())


def _age(row: ConsumerLag) -> float | None:
    return row.oldest_undelivered.total_seconds() if row.oldest_undelivered else None


@consumers_app.command("list")
def list_consumers(as_json: AsJson = False) -> None:
    """Every consumer: its module, whether it runs, its ordering, attempts and subscriptions."""
    rows = _run(lambda admin: admin.lag())
    if as_json:
        print_json(ConsumerLagsView.of(rows))
        return
    if not rows:
        typer.echo("no consumer is registered")
        return
    built = table("Consumer\nModule", "State\nOrder", "Attempts", "Subscriptions", ids=0)
    for row in rows:
        built.add_row(
            lines(row.consumer, row.owner_module),
            lines("active" if row.active else "paused", "ordered" if row.ordered else "unordered"),
            lines(str(row.max_attempts)),
            lines(*row.subscriptions),
        )
    print_table(built)


@consumers_app.command("lag")
def lag(as_json: AsJson = False) -> None:
    """Per consumer: deliveries not yet done, the age of the oldest, and dead letters."""
    rows = _run(lambda admin: admin.lag())
    if as_json:
        print_json(ConsumerLagsView.of(rows))
        return
    if not rows:
        typer.echo("no consumer is registered")
        return
    built = table("Consumer", "Behind", "Oldest (s)", "Dead letters", "State")
    for row in rows:
        age = _age(row)
        built.add_row(
            lines(row.consumer),
            lines(str(row.events_behind)),
            lines("" if age is None else f"{age:.1f}"),
            lines(str(row.dead_letters)),
            lines("active" if row.active else "paused"),
        )
    print_table(built)


@consumers_app.command("dead-letters")
def dead_letters(
    consumer: Consumer,
    before: Annotated[
        int | None, typer.Option(help="Show the page of older rows below this sequence.")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=MAX_LIMIT, help="Rows per page.")] = (
        DEFAULT_LIMIT
    ),
    as_json: AsJson = False,
) -> None:
    """The consumer's dead-lettered deliveries, newest first: the event, the reason and code.

    --json prints {"items": [...], "pageInfo": {...}}: pass pageInfo.endCursor as --before for
    the next page. Bring them back with replay.
    """
    items = _run(lambda admin: admin.dead_letters(consumer, before=before, limit=limit))
    if as_json:
        print_json(ConsumerDeadLetterPageView.of(items, limit=limit))
        return
    if not items:
        typer.echo("no dead letters")
        return
    built = table("Sequence\nDelivery", "Event type\nEvent", "Reason\nCode", "When", ids=2)
    for item in items:
        built.add_row(
            lines(str(item.sequence), str(item.delivery_id)),
            lines(f"{item.event_type} v{item.contract_version}", str(item.event_id)),
            lines(item.reason, item.code),
            lines(short_time(item.dead_lettered_at)),
        )
    print_table(built)
    if len(items) == limit:
        typer.echo(f"older: add --before {items[-1].sequence}", err=True)


@consumers_app.command("replay")
def replay(
    consumer: Consumer,
    from_sequence: Annotated[
        int | None,
        typer.Option("--from", min=1, help="From this publication sequence on."),
    ] = None,
    since: Annotated[
        datetime | None,
        typer.Option(
            "--since",
            formats=["%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d"],
            help="Events published at this time or later (ISO 8601; UTC when no offset).",
        ),
    ] = None,
    reason: WhyOption = None,
    as_json: AsJson = False,
) -> None:
    """Deliver again, in a new round and in publication order, every event the consumer's
    subscriptions match that was published from --from SEQUENCE or --since TIME on.
    Audited."""
    if (from_sequence is None) == (since is None):
        raise fail("give exactly one of --from SEQUENCE and --since TIME", ExitCode.USAGE)
    if since is not None and since.tzinfo is None:
        since = since.replace(tzinfo=UTC)
    written = _run(
        lambda admin: admin.replay(
            consumer, from_sequence=from_sequence, since=since, reason=reason
        )
    )
    if as_json:
        print_json({"consumer": consumer, "deliveries": written})
        return
    typer.echo(f"{consumer}: {written} deliveries in a new round")


def _set_active(consumer: str, *, active: bool, reason: str | None, as_json: bool) -> None:
    changed = _run(lambda admin: admin.set_active(consumer, active=active, reason=reason))
    if as_json:
        print_json({"consumer": consumer, "active": active, "changed": changed})
        return
    state = "resumed" if active else "paused"
    typer.echo(f"{consumer} {state}" if changed else f"{consumer} was already {state}")


@consumers_app.command("pause")
def pause(consumer: Consumer, reason: WhyOption = None, as_json: AsJson = False) -> None:
    """Pause a consumer: it claims nothing and completes nothing; deliveries keep arriving.
    Audited."""
    _set_active(consumer, active=False, reason=reason, as_json=as_json)


@consumers_app.command("resume")
def resume(consumer: Consumer, reason: WhyOption = None, as_json: AsJson = False) -> None:
    """Resume a paused consumer: it takes its deliveries from where they wait. Audited."""
    _set_active(consumer, active=True, reason=reason, as_json=as_json)
