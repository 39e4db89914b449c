"""The console's messages: the filtered list, one message's story, and its repairs."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from litestar import Controller, Request, get, post
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.params import FromPath
from litestar.response import Redirect, Template

from outbox.application.delivery.copy_routes import ChannelRoutes, NoProvider
from outbox.application.delivery.errors import DeadLetterRefused, MessageNotFound
from outbox.application.delivery.operations import (
    MessageQuery,
    ReceiptsQuery,
    RequeueCommand,
    StaffSearch,
)
from outbox.application.errors import InvalidField
from outbox.application.operator.reissue_dead_letter import ReissueCommand
from outbox.application.operator.repair_matching_messages import (
    MAX_MATCHES,
    BulkAction,
    BulkRepairCommand,
    MatchQuery,
)
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import State as MessageState
from outbox.domain.delivery.providers import PROVIDER_NAMES
from outbox.domain.purposes import Purpose
from outbox.entrypoints.http.console.context import PREFIX, Console
from outbox.entrypoints.http.console.filters import FIELDS, parse_filter
from outbox.entrypoints.http.console.guard import CSRF_FIELD, Staff, check_form, staff
from outbox.entrypoints.http.console.rendering import form_key, page

ConsoleParts = NamedDependency[Console]
SECTION = "Messages"
PAGE_SIZE = 50
NOTICES = {
    "reissued": "Reissued: a new code is on its way; the old one no longer works.",
    "requeued": "Requeued: a copy is on its way.",
    "replayed": "Already done by an earlier submission of this form: nothing repeated.",
}
# The same, when the channel's provider is paused: the new message waits for its resume.
WAITING = {
    "reissued": "Reissued: the old code no longer works; the new one waits until {p} is resumed"
    " (Providers), then goes out.",
    "requeued": "Requeued: the copy waits until {p} is resumed (Providers), then goes out.",
}


CHOICES: dict[str, Any] = {
    "states": [state.value for state in MessageState],
    "purposes": [purpose.value for purpose in Purpose],
    "reasons": [reason.value for reason in FailureClass],
}


def _routes(console: Console) -> ChannelRoutes:
    """Which provider sends each channel, as the repairs themselves see it."""
    return console.services.repair_matching.router.routes


def _notice(done: str | None, waits: str | None) -> str | None:
    """The notice after a repair; ``waits`` is a paused provider's name (anything else is
    ignored: it comes from the address bar)."""
    if done in WAITING and waits in PROVIDER_NAMES:
        return WAITING[done].format(p=waits)
    return NOTICES.get(done or "")


def _cursor(raw: str | None) -> UUID | None:
    try:
        return UUID(raw) if raw else None
    except ValueError:
        raise InvalidField("cursor", "a message id") from None


class ConsoleMessagesController(Controller):
    """Messages: search, detail, reissue, requeue, and the same over a whole filter."""

    path = f"{PREFIX}/messages"
    include_in_schema = False

    @get("/")
    async def messages(self, request: Request[Any, Any, State], console: ConsoleParts) -> Template:
        """The list, newest first, in keyset pages."""
        caller = await staff(request, console)
        params = request.query_params
        try:
            where = parse_filter({name: params.get(name) for name in FIELDS})
            result = await console.operator.messages.list_messages(
                StaffSearch(
                    actor=caller.actor,
                    where=where.where(),
                    after=_cursor(params.get("after")),
                    before=_cursor(params.get("before")),
                    limit=PAGE_SIZE,
                )
            )
        except InvalidField as bad:
            return await self._invalid(caller, str(bad))
        return page(
            "messages.html",
            caller.signed_in,
            section=SECTION,
            f=where,
            page=result,
            query=where.query(),
            query_fields=where.fields(),
            # Only the repairs some listed dead letter allows (a sign-up code is never
            # requeued, a notification never reissued, nothing twice).
            bulk_actions=[
                a.value
                for a in BulkAction
                if any(a.fits(i, routes=_routes(console)) for i in result.items)
            ],
            **CHOICES,
        )

    async def _invalid(self, caller: Staff, problem: str) -> Template:
        return page(
            "messages.html",
            caller.signed_in,
            status=400,
            section=SECTION,
            error=problem,
            f=parse_filter({}),
            page=None,
            query="",
            query_fields=[],
            bulk_actions=[],
            **CHOICES,
        )

    @post("/search", status_code=303)
    async def search(
        self, request: Request[Any, Any, State], console: ConsoleParts
    ) -> Redirect | Template:
        """The filter form: the destination becomes its digest, then the list is shown."""
        caller = await staff(request, console)
        form = await request.form()
        check_form(request, caller.session.csrf, form.get(CSRF_FIELD), origin=console.origin)
        values = {name: form.get(name) for name in (*FIELDS, "destination")}
        try:
            where = parse_filter(values)
            # One row, read as this staff member: the gate answers before the redirect does.
            await console.operator.messages.list_messages(
                StaffSearch(actor=caller.actor, where=where.where(), limit=1)
            )
        except InvalidField as bad:
            return await self._invalid(caller, str(bad))
        return Redirect(f"{PREFIX}/messages?{where.query()}", status_code=303)

    @get("/{message_id:uuid}")
    async def message(
        self,
        request: Request[Any, Any, State],
        console: ConsoleParts,
        message_id: FromPath[UUID],
    ) -> Template:
        """One message with its attempts and audit."""
        caller = await staff(request, console)
        try:
            detail = await console.operator.messages.show_message(
                MessageQuery(message_id=message_id, actor=caller.actor)
            )
        except MessageNotFound:
            return page(
                "refused.html",
                caller.signed_in,
                status=404,
                section=SECTION,
                title="No such message",
                message="No message has this id (retention may have removed it).",
                back=f"{PREFIX}/messages",
            )
        audit = await console.services.reads.message_audit(
            actor=caller.actor, message_id=message_id
        )
        receipts = await console.operator.messages.show_receipts(
            ReceiptsQuery(message_id=message_id, actor=caller.actor)
        )
        return page(
            "message.html",
            caller.signed_in,
            section=SECTION,
            title=f"Message {message_id}",
            notice=_notice(request.query_params.get("done"), request.query_params.get("waits")),
            m=detail,
            # No provider sends its channel: a repair would dead-letter at once.
            unserved=not _routes(console).sends(detail.channel),
            audit=audit,
            receipts=list(zip(receipts.receipts, receipts.states_after, strict=True)),
            delivery_state=receipts.delivery_state.value if detail.published_at else None,
            form_key=form_key(),
        )

    @post("/{message_id:uuid}/repairs", status_code=303)
    async def repair(
        self, request: Request[Any, Any, State], console: ConsoleParts, message_id: FromPath[UUID]
    ) -> Redirect | Template:
        """Reissue or requeue one dead letter, with a reason, once per form."""
        caller = await staff(request, console)
        form = await request.form()
        check_form(request, caller.session.csrf, form.get(CSRF_FIELD), origin=console.origin)
        action = form.get("action")
        key, reason = form.get("idempotency_key"), str(form.get("reason", ""))
        try:
            if action == "reissue":
                receipt = await console.operator.reissue_dead_letter(
                    ReissueCommand(
                        actor=caller.actor,
                        message_id=message_id,
                        idempotency_key=key,
                        reason=reason,
                    )
                )
            elif action == "requeue":
                receipt = await console.operator.messages.requeue_dead_letter(
                    RequeueCommand(
                        actor=caller.actor,
                        message_id=message_id,
                        idempotency_key=key,
                        reason=reason,
                    )
                )
            else:
                raise InvalidField("action", "reissue or requeue")  # noqa: TRY301
        except InvalidField as bad:
            return _refused(caller.signed_in, message_id, f"{bad}", 400)
        except NoProvider as refused:
            return _refused(caller.signed_in, message_id, _no_provider(refused), 409)
        except DeadLetterRefused as refused:
            why = refused.refusal.value.replace("_", " ")
            return _refused(caller.signed_in, message_id, f"Refused: {why}.", 409)
        done = "replayed" if receipt.replayed else f"{action}d"
        waits = f"&waits={receipt.waits_for}" if receipt.waits_for and not receipt.replayed else ""
        return Redirect(f"{PREFIX}/messages/{message_id}?done={done}{waits}", status_code=303)

    @get("/bulk")
    async def bulk_preview(
        self, request: Request[Any, Any, State], console: ConsoleParts
    ) -> Template:
        """How many dead letters the filter matches, and the form that repairs them all."""
        caller = await staff(request, console)
        params = request.query_params
        where = parse_filter({name: params.get(name) for name in FIELDS})
        action = BulkAction(params.get("action") or "requeue")
        preview = await console.services.repair_matching.preview(
            MatchQuery(actor=caller.actor, where=where.where(), action=action)
        )
        return page(
            "bulk_preview.html",
            caller.signed_in,
            section=SECTION,
            title=f"{action.value} every match",
            action=action.value,
            preview=preview,
            max=MAX_MATCHES,
            query=where.query(),
            query_fields=where.fields(),
            form_key=form_key(),
        )

    @post("/bulk", status_code=200)
    async def bulk(self, request: Request[Any, Any, State], console: ConsoleParts) -> Template:
        """Repair every match, one audit row each; a retried form repeats nothing."""
        caller = await staff(request, console)
        form = await request.form()
        check_form(request, caller.session.csrf, form.get(CSRF_FIELD), origin=console.origin)
        try:
            where = parse_filter({name: form.get(name) for name in FIELDS})
            as_of = datetime.fromisoformat(str(form.get("as_of", "")))
            previewed = datetime.fromisoformat(str(form.get("previewed_at") or as_of.isoformat()))
            result = await console.services.repair_matching(
                BulkRepairCommand(
                    query=MatchQuery(
                        actor=caller.actor,
                        where=where.where(),
                        as_of=as_of,
                        previewed_at=previewed,
                    ),
                    action=BulkAction(str(form.get("action", ""))),
                    reason=str(form.get("reason", "")),
                    idempotency_key=str(form.get("idempotency_key", "")),
                )
            )
        except (InvalidField, ValueError) as bad:
            detail = str(bad) if isinstance(bad, InvalidField) else f"bad form: {bad}"
            return page(
                "refused.html",
                caller.signed_in,
                status=400,
                section=SECTION,
                title="Not done",
                message=detail,
                back=f"{PREFIX}/messages?state=dead_lettered",
            )
        return page(
            "bulk_result.html", caller.signed_in, section=SECTION, title="Done", result=result
        )


def _no_provider(refused: NoProvider) -> str:
    channel = refused.channel.value
    return (
        f"Refused: no provider sends {channel} (OUTBOX_CHANNEL_{channel.upper()} is none), so"
        " a new message would dead-letter at once. Nothing was changed: a code already sent"
        " still works. Configure a provider for the channel first."
    )


def _refused(caller: Any, message_id: UUID, message: str, status: int) -> Template:
    return page(
        "refused.html",
        caller,
        status=status,
        section=SECTION,
        title="Not done",
        message=message,
        back=f"{PREFIX}/messages/{message_id}",
    )
