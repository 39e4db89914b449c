"""``outboxctl suppressions list|add|lift``: destinations nothing may be sent to."""

from __future__ import annotations

from typing import Annotated

import typer

from outbox.application.delivery.operations import SUPPRESSIONS_MAX as MAX_LIMIT
from outbox.application.delivery.operations import (
    SuppressionAction,
    SuppressionCommand,
    SuppressionQuery,
)
from outbox.application.staff import DEFAULT_LIMIT
from outbox.domain.channels import Channel
from outbox.entrypoints.cli.exit_codes import ExitCode
from outbox.entrypoints.cli.guard import fail
from outbox.entrypoints.cli.operator_run import run_operator
from outbox.entrypoints.cli.options import AsJson, Reason
from outbox.entrypoints.cli.output import print_json, print_table
from outbox.entrypoints.cli.receipt_output import change_json, suppression_json, suppressions_table

suppressions_app = typer.Typer(
    help="See, add and lift suppressed destinations (hard bounces, complaints). Audited.",
    no_args_is_help=True,
)

Destination = Annotated[
    str, typer.Argument(help="The e-mail address or E.164 number (stored as a digest).")
]


@suppressions_app.command("list")
def list_(
    include_lifted: Annotated[bool, typer.Option("--all", help="Lifted suppressions too.")] = False,
    limit: Annotated[
        int, typer.Option(min=1, max=MAX_LIMIT, help="At most this many.")
    ] = DEFAULT_LIMIT,
    as_json: AsJson = False,
) -> None:
    """List suppressed destinations, newest first, masked, with their cause and reason."""
    items = run_operator(
        lambda services: services.messages.list_suppressions(
            SuppressionQuery(include_lifted=include_lifted, limit=limit)
        )
    )
    if as_json:
        print_json({"items": [suppression_json(item) for item in items]})
        return
    if not items:
        typer.echo("no suppressions")
        return
    print_table(suppressions_table(list(items)))


@suppressions_app.command("add")
def add(
    destination: Destination,
    reason: Reason,
    channel: Annotated[
        Channel | None,
        typer.Option(help="The channel (default: email for an address, sms for a number)."),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Suppress a destination for every purpose: later messages to it dead-letter
    'suppressed' without being sent. Audited."""
    command = SuppressionCommand(
        action=SuppressionAction.ADD, destination=destination, reason=reason, channel=channel
    )
    change = run_operator(lambda services: services.messages.change_suppression(command))
    if as_json:
        print_json(change_json(change))
        return
    if change is None:  # an add always answers; kept for the type checker
        raise fail("the database answered no suppression", ExitCode.DATABASE_UNAVAILABLE)
    verb = "suppressed" if change.changed else "already suppressed"
    typer.echo(f"{verb} {change.destination} ({change.id})")


@suppressions_app.command("lift")
def lift(destination: Destination, reason: Reason, as_json: AsJson = False) -> None:
    """Lift the suppression of a destination: the next message to it is sent. Audited."""
    command = SuppressionCommand(
        action=SuppressionAction.LIFT, destination=destination, reason=reason
    )
    change = run_operator(lambda services: services.messages.change_suppression(command))
    if as_json:
        print_json(change_json(change))
        if change is None:
            raise typer.Exit(ExitCode.NOT_FOUND)
        return
    if change is None:
        raise fail("not found: this destination is not suppressed", ExitCode.NOT_FOUND)
    typer.echo(f"lifted {change.destination} ({change.id})")
