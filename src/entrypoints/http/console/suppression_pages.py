"""The console's suppressions: the list, and lifting or adding one with a reason.

The page holds no rule: the destination is normalised, the reason checked and the change
audited by MessageOperations.change_suppression; the database checks the staff member's
step-up on every call. A destination is typed, never shown: the list carries only the
masked form.
"""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, get, post
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.response import Redirect, Template

from outbox.application.delivery.operations import (
    SuppressionAction,
    SuppressionCommand,
    SuppressionQuery,
)
from outbox.application.errors import InvalidRequest
from outbox.domain.channels import Channel
from outbox.entrypoints.http.console.context import PREFIX, Console
from outbox.entrypoints.http.console.guard import CSRF_FIELD, Staff, check_form, staff
from outbox.entrypoints.http.console.rendering import page

ConsoleParts = NamedDependency[Console]
SECTION = "Suppressions"
PAGE_SIZE = 200
NOTICES = {
    "lifted": "Lifted: messages to that destination are sent again.",
    "added": "Suppressed: nothing more is sent to that destination until it is lifted.",
    "already": "Nothing changed: that destination was already suppressed.",
    "none": "Nothing changed: that destination is not suppressed.",
}


class ConsoleSuppressionsController(Controller):
    """Suppressed destinations: list, lift, add."""

    path = f"{PREFIX}/suppressions"
    include_in_schema = False

    @get("/")
    async def suppressions(
        self, request: Request[Any, Any, State], console: ConsoleParts
    ) -> Template:
        """The newest suppressions first; lifted ones too with ``?lifted=1``."""
        caller = await staff(request, console)
        return await _page(
            console,
            caller,
            lifted=request.query_params.get("lifted") == "1",
            notice=NOTICES.get(request.query_params.get("done") or ""),
        )

    @post("/lift", status_code=303)
    async def lift(
        self, request: Request[Any, Any, State], console: ConsoleParts
    ) -> Redirect | Template:
        """Lift the active suppression of the typed destination, with a reason."""
        return await _change(request, console, SuppressionAction.LIFT)

    @post("/add", status_code=303)
    async def add(
        self, request: Request[Any, Any, State], console: ConsoleParts
    ) -> Redirect | Template:
        """Suppress the typed destination, with a reason."""
        return await _change(request, console, SuppressionAction.ADD)


async def _change(
    request: Request[Any, Any, State], console: Console, action: SuppressionAction
) -> Redirect | Template:
    caller = await staff(request, console)
    form = await request.form()
    check_form(request, caller.session.csrf, form.get(CSRF_FIELD), origin=console.origin)
    channel = Channel.WHATSAPP if form.get("channel") == Channel.WHATSAPP.value else None
    try:
        change = await console.operator.messages.change_suppression(
            SuppressionCommand(
                action=action,
                destination=str(form.get("destination", "")),
                reason=str(form.get("reason", "")),
                channel=channel,
                actor=caller.actor,
            )
        )
    except InvalidRequest as bad:
        return await _page(console, caller, error=f"Not done: {bad}.", status=400)
    if action is SuppressionAction.LIFT:
        done = "lifted" if change is not None else "none"
    else:
        done = "added" if change is not None and change.changed else "already"
    return Redirect(f"{PREFIX}/suppressions?done={done}", status_code=303)


async def _page(
    console: Console,
    caller: Staff,
    *,
    lifted: bool = False,
    notice: str | None = None,
    error: str | None = None,
    status: int = 200,
) -> Template:
    rows = await console.operator.messages.list_suppressions(
        SuppressionQuery(include_lifted=lifted, limit=PAGE_SIZE, actor=caller.actor)
    )
    return page(
        "suppressions.html",
        caller.signed_in,
        status=status,
        section=SECTION,
        notice=notice,
        error=error,
        suppressions=rows,
        lifted=lifted,
    )
