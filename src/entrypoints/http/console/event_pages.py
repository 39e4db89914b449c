"""The console's tenant events: dead letters and parked aggregates, one event, its repairs."""

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
    EventDeadLetterQuery,
    EventQuery,
    ParkedQuery,
    ReleaseCommand,
    RepublishCommand,
)
from outbox.entrypoints.http.console.context import PREFIX, Console
from outbox.entrypoints.http.console.guard import CSRF_FIELD, check_form, staff
from outbox.entrypoints.http.console.rendering import form_key, page

ConsoleParts = NamedDependency[Console]
SECTION = "Events"
NOTICES = {
    "republished": "Republished: a new record goes before the aggregate's later events.",
    "released": "Released: the aggregate's later events flow; this one stays dead.",
    "replayed": "Already done by an earlier submission of this form: nothing repeated.",
}


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
            organization = _uuid(params.get("organization"), "organization")
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
        return page(
            "events.html",
            caller.signed_in,
            section=SECTION,
            organization=organization,
            unresolved=unresolved,
            page=dead,
            parked=parked.items,
            query=query,
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
