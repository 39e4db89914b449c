"""``outboxctl messages show``: one message, masked, with its attempt history."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

import typer

from application.operator.show_message import MessageQuery
from entrypoints.cli.operator_output import message_json, message_tables, print_json, print_table
from entrypoints.cli.operator_run import run_operator

messages_app = typer.Typer(help="Inspect messages (masked; never a secret).", no_args_is_help=True)


@messages_app.command("show")
def show(
    message_id: Annotated[UUID, typer.Argument(help="The message's id.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
) -> None:
    """Show a message's state, masked destination, timestamps and every recorded attempt."""
    detail = run_operator(
        lambda services: services.show_message(MessageQuery(message_id=message_id))
    )
    if as_json:
        print_json(message_json(detail))
        return
    fields, history = message_tables(detail)
    print_table(fields)
    print_table(history)
