"""The console's consumers of tenant events (lag, dead letters, pause, resume, replay) and
the workers view (which processes run which lanes, with what lag)."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, get, post
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.params import FromPath
from litestar.response import Redirect, Template

from outbox.application.errors import InvalidField, InvalidRequest
from outbox.application.events.consumer_operations import ConsumerReplay
from outbox.entrypoints.http.console.context import PREFIX, Console
from outbox.entrypoints.http.console.filters import form_time
from outbox.entrypoints.http.console.guard import CSRF_FIELD, Staff, check_form, staff
from outbox.entrypoints.http.console.rendering import page

ConsoleParts = NamedDependency[Console]
SECTION = "Consumers"
NOTICES = {
    "paused": "Paused: it claims nothing; its deliveries keep arriving and wait.",
    "resumed": "Resumed: it takes its deliveries from where they wait.",
    "unchanged": "Nothing changed: it was already in that state.",
}


class ConsoleConsumersController(Controller):
    """Consumers: their lag, dead letters, and the controls."""

    path = f"{PREFIX}/consumers"
    include_in_schema = False

    @get("/")
    async def consumers(self, request: Request[Any, Any, State], console: ConsoleParts) -> Template:
        """Every consumer with its state and lag."""
        caller = await staff(request, console)
        rows = await console.operator.consumers.lag(actor=caller.actor)
        return page(
            "consumers.html",
            caller.signed_in,
            section=SECTION,
            title="Consumers",
            notice=_notice(request),
            consumers=rows,
        )

    @get("/{consumer:str}")
    async def consumer(
        self, request: Request[Any, Any, State], console: ConsoleParts, consumer: FromPath[str]
    ) -> Template:
        """One consumer: its lag, its dead letters (newest first) and its controls."""
        caller = await staff(request, console)
        found = [
            c
            for c in await console.operator.consumers.lag(actor=caller.actor)
            if c.consumer == consumer
        ]
        if not found:
            return _refused(caller, 404, "No consumer has this code.")
        before = request.query_params.get("before") or ""
        letters = await console.operator.consumers.dead_letters(
            consumer, before=int(before) if before.isdigit() else None, limit=50, actor=caller.actor
        )
        return page(
            "consumer.html",
            caller.signed_in,
            section=SECTION,
            title=f"Consumer {consumer}",
            notice=_notice(request),
            c=found[0],
            letters=letters,
            older=letters[-1].sequence if len(letters) == 50 else None,
        )

    @post("/{consumer:str}/{change:str}", status_code=303)
    async def change(
        self,
        request: Request[Any, Any, State],
        console: ConsoleParts,
        consumer: FromPath[str],
        change: FromPath[str],
    ) -> Redirect | Template:
        """Pause, resume or replay, with a reason."""
        caller = await staff(request, console)
        form = await request.form()
        check_form(request, caller.session.csrf, form.get(CSRF_FIELD), origin=console.origin)
        reason = str(form.get("reason", ""))
        back = f"{PREFIX}/consumers/{consumer}"
        try:
            if change in ("pause", "resume"):
                changed = await console.operator.consumers.set_active(
                    consumer, active=change == "resume", actor=caller.actor, reason=reason
                )
                done = ("resumed" if change == "resume" else "paused") if changed else "unchanged"
                return Redirect(f"{back}?done={done}", status_code=303)
            if change == "replay":
                raw = str(form.get("from_sequence", "")).strip()
                if raw and not raw.isdigit():
                    raise InvalidField("from", "a publication sequence (a number)")  # noqa: TRY301
                written = await console.operator.consumers.replay(
                    ConsumerReplay(
                        consumer=consumer,
                        actor=caller.actor,
                        from_sequence=int(raw) if raw else None,
                        since=form_time(form.get("since"), "since"),
                        reason=reason,
                    )
                )
                return Redirect(f"{back}?done=replayed&deliveries={written}", status_code=303)
        except (InvalidField, InvalidRequest) as bad:
            return _refused(caller, 400, f"{bad}")
        return _refused(caller, 404, "No such action: pause, resume or replay.")


class ConsoleWorkersController(Controller):
    """The workers view."""

    path = f"{PREFIX}/workers"
    include_in_schema = False

    @get("/")
    async def workers(self, request: Request[Any, Any, State], console: ConsoleParts) -> Template:
        """Every lane of every worker process seen in the last day, running ones first."""
        caller = await staff(request, console)
        rows = await console.operator.workers.workers(actor=caller.actor)
        return page(
            "workers.html", caller.signed_in, section="Workers", title="Workers", lanes=rows
        )


def _notice(request: Request[Any, Any, State]) -> str | None:
    done = request.query_params.get("done") or ""
    if done == "replayed":
        # From the address bar: only a number is shown.
        count = request.query_params.get("deliveries") or ""
        written = f"{int(count)} deliveries" if count.isdigit() else "its deliveries"
        return f"Replayed: {written} in a new round, in publication order."
    return NOTICES.get(done)


def _refused(caller: Staff, status: int, message: str) -> Template:
    return page(
        "refused.html",
        caller.signed_in,
        status=status,
        section=SECTION,
        title="Not done",
        message=message,
        back=f"{PREFIX}/consumers",
    )
