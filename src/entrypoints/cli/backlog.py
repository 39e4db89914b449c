"""``outboxctl backlog``: messages per state and the age of the oldest due message."""

from __future__ import annotations

from typing import Annotated

import typer

from outbox.application.delivery.operations import BacklogQuery
from outbox.entrypoints.cli.operator_output import backlog_table
from outbox.entrypoints.cli.operator_run import run_operator
from outbox.entrypoints.cli.output import print_json, print_table
from outbox.entrypoints.wire.messages import BacklogView


def backlog(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
) -> None:
    """Show messages per state and how long the oldest due pending message has waited.

    Reads as the database operator: the configured login must be a member of outbox_owner.
    """
    result = run_operator(lambda services: services.messages.show_backlog(BacklogQuery()))
    if as_json:
        print_json(BacklogView.of(result))
    else:
        print_table(backlog_table(result))
