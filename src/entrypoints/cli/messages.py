"""``outboxctl messages list|show``: find messages and read one, masked, with its attempts."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated
from uuid import UUID

import msgspec
import typer

from outbox.application.delivery.message_filters import MessageFilter
from outbox.application.delivery.operations import MessageListQuery as MessageQuery
from outbox.application.delivery.operations import MessageQuery as ShowQuery
from outbox.application.delivery.operations import (
    MessageReceipts,
    ReceiptsQuery,
)
from outbox.application.delivery.views import MessageDetail
from outbox.application.staff import DEFAULT_LIMIT, MAX_LIMIT
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import State
from outbox.domain.purposes import Purpose
from outbox.entrypoints.cli.operator_output import message_list_table, message_tables, page_hints
from outbox.entrypoints.cli.operator_run import run_operator
from outbox.entrypoints.cli.options import AsJson
from outbox.entrypoints.cli.output import print_json, print_table
from outbox.entrypoints.cli.receipt_output import receipts_json, receipts_table
from outbox.entrypoints.wire.messages import MessagePageView, MessageView

if TYPE_CHECKING:  # the services' module loads with the command that runs them
    from outbox.application.operator.services import OperatorServices

messages_app = typer.Typer(
    help="Find and inspect messages (masked; never a secret).", no_args_is_help=True
)


def _moment(value: str) -> datetime:
    """An ISO 8601 time; one without an offset is UTC."""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter(
            "use an ISO 8601 time such as 2026-12-01 or 2026-12-01T09:30:00Z"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@messages_app.command("list")
def list_(
    *,
    state: Annotated[State | None, typer.Option(help="Only messages in this state.")] = None,
    purpose: Annotated[Purpose | None, typer.Option(help="Only messages of this purpose.")] = None,
    reason: Annotated[
        FailureClass | None, typer.Option(help="Only dead letters with this reason.")
    ] = None,
    provider: Annotated[
        str | None, typer.Option(help="Only messages an attempt sent through this provider.")
    ] = None,
    since: Annotated[
        datetime | None,
        typer.Option(
            parser=_moment,
            metavar="TIME",
            help="Created at or after TIME (ISO 8601; UTC without an offset).",
        ),
    ] = None,
    until: Annotated[
        datetime | None,
        typer.Option(parser=_moment, metavar="TIME", help="Created before TIME (ISO 8601)."),
    ] = None,
    message_id: Annotated[
        UUID | None, typer.Option("--id", help="The message with this id.")
    ] = None,
    destination: Annotated[
        str | None,
        typer.Option(
            help="Messages to this e-mail address or E.164 number (matched on its SHA-256"
            " digest; shown masked)."
        ),
    ] = None,
    after: Annotated[
        UUID | None, typer.Option(help="Show the page of older messages after this id.")
    ] = None,
    before: Annotated[
        UUID | None, typer.Option(help="Show the page of newer messages before this id.")
    ] = None,
    limit: Annotated[
        int, typer.Option(min=1, max=MAX_LIMIT, help="Messages per page.")
    ] = DEFAULT_LIMIT,
    as_json: AsJson = False,
) -> None:
    """List messages, newest first, masked, filtered by every option given.

    Reads as the database operator. Pages stay stable while messages arrive: pass the last
    id as --after (or pageInfo.endCursor of --json) for the next page.
    """
    where = MessageFilter(
        state=state,
        purpose=purpose,
        reason=reason,
        provider=provider,
        since=since,
        until=until,
        message_id=message_id,
    )
    query = MessageQuery(
        where=where,
        destination=destination,
        after=after,
        before=before,
        limit=limit,
    )
    page = run_operator(lambda services: services.messages.list_messages(query))
    if as_json:
        print_json(MessagePageView.of(page))
        return
    if not page.items:
        typer.echo("no messages")
        return
    print_table(message_list_table(page.items))
    for hint in page_hints(page):
        typer.echo(hint, err=True)


@messages_app.command("show")
def show(
    message_id: Annotated[UUID, typer.Argument(help="The message's id.")],
    as_json: AsJson = False,
) -> None:
    """Show a message's state, masked destination, timestamps and every recorded attempt,
    with what the provider said (sanitised: no address, no secret), then the receipts its
    provider sent back and the delivery state they add up to."""

    async def read(services: OperatorServices) -> tuple[MessageDetail, MessageReceipts]:
        detail = await services.messages.show_message(ShowQuery(message_id=message_id))
        return detail, await services.messages.show_receipts(ReceiptsQuery(message_id=message_id))

    detail, receipts = run_operator(read)
    sent = detail.state is State.PUBLISHED
    if as_json:
        print_json(
            {**msgspec.to_builtins(MessageView.of(detail)), **receipts_json(receipts, sent=sent)}
        )
        return
    fields, history = message_tables(detail)
    print_table(fields)
    print_table(history)
    print_table(receipts_table(receipts, sent=sent))
