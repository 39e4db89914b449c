"""``outboxctl dead-letters list|reissue|requeue``: see and repair messages that failed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated
from uuid import UUID

import typer

from outbox.application.delivery.operations import (
    DeadLetterQuery,
    RequeueCommand,
)
from outbox.application.delivery.views import CopyReceipt
from outbox.application.operator.reissue_dead_letter import ReissueCommand
from outbox.application.staff import DEFAULT_LIMIT, MAX_LIMIT
from outbox.entrypoints.cli.operator_output import dead_letter_table, page_hints
from outbox.entrypoints.cli.operator_run import run_operator
from outbox.entrypoints.cli.options import AsJson, IdempotencyKey, StaffEmail
from outbox.entrypoints.cli.output import print_json, print_table, short_time
from outbox.entrypoints.wire.messages import DeadLetterPageView, ReissueView

if TYPE_CHECKING:  # the services' module loads with the command that runs them
    from outbox.application.operator.services import OperatorServices

dead_letters_app = typer.Typer(
    help="List dead letters; reissue a one-time code or requeue a notification.",
    no_args_is_help=True,
)

MessageId = Annotated[UUID, typer.Argument(help="The dead letter's id.")]


@dead_letters_app.command("list")
def list_(
    after: Annotated[
        UUID | None, typer.Option(help="Show the page of older dead letters after this id.")
    ] = None,
    before: Annotated[
        UUID | None, typer.Option(help="Show the page of newer dead letters before this id.")
    ] = None,
    limit: Annotated[
        int, typer.Option(min=1, max=MAX_LIMIT, help="Dead letters per page.")
    ] = DEFAULT_LIMIT,
    as_json: AsJson = False,
) -> None:
    """List dead letters, newest first, with masked destinations, and whether each was already
    reissued or requeued (the JSON names the copy).

    --json prints {"items": [...], "pageInfo": {...}} as the staff route does: pass
    pageInfo.endCursor as --after for the next page.
    """
    page = run_operator(
        lambda services: services.messages.list_dead_letters(
            DeadLetterQuery(after=after, before=before, limit=limit)
        )
    )
    if as_json:
        print_json(DeadLetterPageView.of(page))
        return
    if not page.items:
        typer.echo("no dead letters")
        return
    print_table(dead_letter_table(page.items))
    for hint in page_hints(page):
        typer.echo(hint, err=True)


def _report(receipt: CopyReceipt, verb: str, as_json: bool) -> None:
    if as_json:
        print_json(ReissueView.of(receipt))
        return
    done = "already " + verb if receipt.replayed else verb
    expiry = f"; it expires at {short_time(receipt.expires_at)} UTC" if receipt.expires_at else ""
    typer.echo(f"{done} {receipt.dead_letter_id} as {receipt.message_id}{expiry}")
    if receipt.waits_for is not None:
        typer.echo(
            f"{receipt.waits_for} is paused: the new message waits until it is resumed"
            f" (outboxctl providers resume {receipt.waits_for} --staff EMAIL --reason TEXT)",
            err=True,
        )


@dead_letters_app.command("reissue")
def reissue(
    message_id: MessageId,
    staff: StaffEmail,
    idempotency_key: IdempotencyKey = None,
    as_json: AsJson = False,
) -> None:
    """Send a new one-time code for the dead letter's still-open challenge.

    The old code stops working; the new one goes out as a new message. Refused, with nothing
    changed, for a superseded, expired or consumed code, a locked or expired challenge, when
    a newer message already goes to the same destination, or when no provider sends the
    channel (OUTBOX_CHANNEL_* set to none). While the channel's provider is paused the new
    code waits for it, and the command says so. Audited.
    """

    async def act(services: OperatorServices) -> CopyReceipt:
        actor = await services.resolve_staff_member(staff)
        return await services.reissue_dead_letter(
            ReissueCommand(actor=actor, message_id=message_id, idempotency_key=idempotency_key)
        )

    _report(run_operator(act, seal_keys=True), "reissued", as_json)


@dead_letters_app.command("requeue")
def requeue(
    message_id: MessageId,
    staff: StaffEmail,
    idempotency_key: IdempotencyKey = None,
    as_json: AsJson = False,
) -> None:
    """Send a dead-lettered notification again, as a new copy. Audited.

    Refused, with nothing changed, when no provider sends its channel; while the channel's
    provider is paused the copy waits for it, and the command says so.
    """

    async def act(services: OperatorServices) -> CopyReceipt:
        actor = await services.resolve_staff_member(staff)
        return await services.messages.requeue_dead_letter(
            RequeueCommand(actor=actor, message_id=message_id, idempotency_key=idempotency_key)
        )

    _report(run_operator(act), "requeued", as_json)
