"""The console's tenant events: search by filter, bulk republish, release or cancel over a
filter (preview, then act), dead letters and parked aggregates, one event, its repairs."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode
from uuid import UUID

from litestar import Controller, Request, get, post
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.params import FromPath
from litestar.response import Redirect, Template

from outbox.application.errors import InvalidField
from outbox.application.events.errors import DeadLetterNotFound, EventNotFound, EventRepairRefused
from outbox.application.events.operations import (
    BulkEventCommand,
    BulkEventQuery,
    EventDeadLetterQuery,
    EventQuery,
    EventSearchQuery,
    ParkedQuery,
    ReleaseCommand,
    RepublishCommand,
)
from outbox.application.events.views import BulkEventAction, EventFilter, EventState
from outbox.entrypoints.http.console.context import PREFIX, Console
from outbox.entrypoints.http.console.filters import form_time
from outbox.entrypoints.http.console.guard import CSRF_FIELD, Staff, check_form, staff
from outbox.entrypoints.http.console.rendering import form_key, page

ConsoleParts = NamedDependency[Console]
SECTION = "Events"
NOTICES = {
    "republished": "Republished: a new record goes before the aggregate's later events.",
    "released": "Released: the aggregate's later events flow; this one stays dead.",
    "replayed": "Already done by an earlier submission of this form: nothing repeated.",
}


FILTER_FIELDS = ("type", "organization", "aggregate_type", "aggregate", "since", "until")


def _text(raw: str | None) -> str | None:
    return (raw or "").strip() or None


def _event_filter(values: Any) -> EventFilter:
    """The filter a query string or a form gives (``values`` reads like a mapping)."""
    return EventFilter(
        event_type=_text(values.get("type")),
        organization_id=_uuid(values.get("organization"), "organization"),
        aggregate_type=_text(values.get("aggregate_type")),
        aggregate_id=_text(values.get("aggregate")),
        since=form_time(values.get("since"), "since"),
        until=form_time(values.get("until"), "until"),
    )


def _filter_fields(values: Any) -> list[tuple[str, str]]:
    """The filter's fields that are set, to carry into a link or a hidden form field."""
    return [(name, str(values.get(name))) for name in FILTER_FIELDS if _text(values.get(name))]


def _choice(enum: type[Any], raw: str | None, field: str) -> Any:
    value = _text(raw)
    if value is None:
        return None
    try:
        return enum(value)
    except ValueError:
        allowed = ", ".join(member.value for member in enum)
        raise InvalidField(field, f"one of {allowed}") from None


def _uuid(raw: str | None, field: str) -> UUID | None:
    value = (raw or "").strip()
    try:
        return UUID(value) if value else None
    except ValueError:
        raise InvalidField(field, "an id (a UUID)") from None


class ConsoleEventsController(Controller):
    """Tenant events: lists, one event's story, republish and release."""

    path = f"{PREFIX}/events"
    include_in_schema = False

    @get("/")
    async def events(
        self, request: Request[Any, Any, State], console: ConsoleParts
    ) -> Template | Redirect:
        """Dead letters (newest first, keyset pages) and parked aggregates."""
        caller = await staff(request, console)
        params = request.query_params
        try:
            event = _uuid(params.get("event"), "event")
            if event is not None:
                return Redirect(f"{PREFIX}/events/{event}", status_code=303)
            where = _event_filter(params)
            state = _choice(EventState, params.get("state"), "state")
            before = _text(params.get("older"))
            found = await console.operator.events.search(
                EventSearchQuery(
                    actor=caller.actor,
                    state=state,
                    where=where,
                    before=int(before) if before and before.isdigit() else None,
                )
            )
            organization = where.organization_id
            unresolved = params.get("unresolved") == "1"
            dead = await console.operator.events.list_dead_letters(
                EventDeadLetterQuery(
                    actor=caller.actor,
                    organization_id=organization,
                    unresolved_only=unresolved,
                    after=_uuid(params.get("after"), "after"),
                    before=_uuid(params.get("before"), "before"),
                )
            )
            parked = await console.operator.events.list_parked(
                ParkedQuery(actor=caller.actor, organization_id=organization)
            )
        except InvalidField as bad:
            return page(
                "refused.html",
                caller.signed_in,
                status=400,
                section=SECTION,
                title="Not shown",
                message=f"{bad}",
                back=f"{PREFIX}/events",
            )
        query = urlencode(
            [
                (k, v)
                for k, v in (
                    ("organization", str(organization or "")),
                    ("unresolved", "1" if unresolved else ""),
                )
                if v
            ]
        )
        fields = _filter_fields(params)
        return page(
            "events.html",
            caller.signed_in,
            section=SECTION,
            organization=organization,
            unresolved=unresolved,
            page=dead,
            parked=parked.items,
            query=query,
            found=found,
            state=state.value if state else "",
            states=[s.value for s in EventState],
            actions=[a.value for a in BulkEventAction],
            values=dict(fields),
            search_query=urlencode([*fields, ("state", state.value if state else "")]),
        )

    @get("/bulk")
    async def bulk_preview(
        self, request: Request[Any, Any, State], console: ConsoleParts
    ) -> Template:
        """How many events the action would change: the form to do it, with a reason."""
        caller = await staff(request, console)
        params = request.query_params
        try:
            action = _choice(BulkEventAction, params.get("action"), "action")
            if action is None:
                raise InvalidField("action", "republish, release or cancel")  # noqa: TRY301
            preview = await console.operator.events.preview_bulk(
                BulkEventQuery(actor=caller.actor, action=action, where=_event_filter(params))
            )
        except InvalidField as bad:
            return _refused(caller, 400, f"{bad}")
        fields = _filter_fields(params)
        return page(
            "events_bulk_preview.html",
            caller.signed_in,
            section=SECTION,
            title=f"{action.value.capitalize()} every match",
            preview=preview,
            action=action,
            fields=fields,
            query=urlencode(fields),
            form_key=form_key(),
        )

    @post("/bulk", status_code=200)
    async def bulk_apply(
        self, request: Request[Any, Any, State], console: ConsoleParts
    ) -> Template:
        """Apply the previewed action to what matched at the preview, once per form."""
        caller = await staff(request, console)
        form = await request.form()
        check_form(request, caller.session.csrf, form.get(CSRF_FIELD), origin=console.origin)
        try:
            action = _choice(BulkEventAction, form.get("action"), "action")
            as_of = form_time(form.get("as_of"), "as_of")
            if action is None or as_of is None:
                raise InvalidField("action", "the preview's form")  # noqa: TRY301
            outcome = await console.operator.events.bulk_repair(
                BulkEventCommand(
                    actor=caller.actor,
                    action=action,
                    where=_event_filter(form),
                    as_of=as_of,
                    reason=str(form.get("reason", "")),
                    idempotency_key=_text(form.get("idempotency_key")),
                )
            )
        except InvalidField as bad:
            return _refused(caller, 400, f"{bad}")
        fields = _filter_fields(form)
        return page(
            "events_bulk_result.html",
            caller.signed_in,
            section=SECTION,
            title=f"{action.value.capitalize()}: done",
            outcome=outcome,
            query=urlencode(fields),
        )

    @get("/{event_id:uuid}")
    async def event(
        self,
        request: Request[Any, Any, State],
        console: ConsoleParts,
        event_id: FromPath[UUID],
    ) -> Template:
        """One event with its records, attempts and audit."""
        caller = await staff(request, console)
        try:
            detail = await console.operator.events.show_event(
                EventQuery(event_id=event_id, actor=caller.actor)
            )
        except EventNotFound:
            return page(
                "refused.html",
                caller.signed_in,
                status=404,
                section=SECTION,
                title="No such event",
                message="No event has this id (retention may have removed it).",
                back=f"{PREFIX}/events",
            )
        audit = await console.services.reads.event_audit(actor=caller.actor, event_id=event_id)
        return page(
            "event.html",
            caller.signed_in,
            section=SECTION,
            title=f"Event {event_id}",
            notice=NOTICES.get(request.query_params.get("done") or ""),
            e=detail,
            audit=audit,
            form_key=form_key(),
        )

    @post("/dead-letters/{dead_letter_id:uuid}/repairs", status_code=303)
    async def repair(
        self,
        request: Request[Any, Any, State],
        console: ConsoleParts,
        dead_letter_id: FromPath[UUID],
    ) -> Redirect | Template:
        """Republish or release one dead letter, with a reason, once per form."""
        caller = await staff(request, console)
        form = await request.form()
        check_form(request, caller.session.csrf, form.get(CSRF_FIELD), origin=console.origin)
        event_id = _uuid(form.get("event"), "event")
        back = f"{PREFIX}/events/{event_id}" if event_id else f"{PREFIX}/events"
        action, key = form.get("action"), form.get("idempotency_key")
        reason = str(form.get("reason", ""))
        try:
            if action == "republish":
                receipt = await console.operator.events.republish(
                    RepublishCommand(
                        actor=caller.actor,
                        dead_letter_id=dead_letter_id,
                        reason=reason,
                        idempotency_key=key,
                    )
                )
            elif action == "release":
                receipt = await console.operator.events.release(
                    ReleaseCommand(
                        actor=caller.actor,
                        dead_letter_id=dead_letter_id,
                        reason=reason,
                        idempotency_key=key,
                    )
                )
            else:
                raise InvalidField("action", "republish or release")  # noqa: TRY301
        except (InvalidField, EventRepairRefused, DeadLetterNotFound) as bad:
            if isinstance(bad, EventRepairRefused):
                message, status = f"Refused: already {bad.resolution}.", 409
            elif isinstance(bad, DeadLetterNotFound):
                message, status = "No such dead letter.", 404
            else:
                message, status = str(bad), 400
            return page(
                "refused.html",
                caller.signed_in,
                status=status,
                section=SECTION,
                title="Not done",
                message=message,
                back=back,
            )
        done = (
            "replayed"
            if receipt.replayed
            else ("republished" if action == "republish" else "released")
        )
        return Redirect(f"{back}?done={done}", status_code=303)


def _refused(caller: Staff, status: int, message: str) -> Template:
    return page(
        "refused.html",
        caller.signed_in,
        status=status,
        section=SECTION,
        title="Not done",
        message=message,
        back=f"{PREFIX}/events",
    )
