"""The console's providers: pause one for every worker, resume it, with reasons."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, get, post
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.params import FromPath
from litestar.response import Redirect, Template

from outbox.application.errors import InvalidField
from outbox.application.operator.pause_provider import ProviderCommand
from outbox.domain.delivery.providers import PROVIDER_NAMES
from outbox.entrypoints.http.console.context import PREFIX, Console
from outbox.entrypoints.http.console.guard import CSRF_FIELD, Staff, check_form, staff
from outbox.entrypoints.http.console.rendering import page

ConsoleParts = NamedDependency[Console]
SECTION = "Providers"
NOTICES = {
    "paused": "Paused: no worker sends through it until it is resumed.",
    "resumed": "Resumed: its waiting messages go out again.",
    "unchanged": "Nothing changed: it was already in that state.",
}


class ConsoleProvidersController(Controller):
    """Provider pauses."""

    path = f"{PREFIX}/providers"
    include_in_schema = False

    @get("/")
    async def providers(self, request: Request[Any, Any, State], console: ConsoleParts) -> Template:
        """The paused providers and the pause form."""
        caller = await staff(request, console)
        return await _page(
            console, caller, notice=NOTICES.get(request.query_params.get("done") or "")
        )

    @post("/pause", status_code=303)
    async def pause(
        self, request: Request[Any, Any, State], console: ConsoleParts
    ) -> Redirect | Template:
        """Pause the named provider."""
        caller = await staff(request, console)
        form = await request.form()
        check_form(request, caller.session.csrf, form.get(CSRF_FIELD), origin=console.origin)
        command = ProviderCommand(
            actor=caller.actor,
            provider=str(form.get("provider", "")),
            reason=str(form.get("reason", "")),
        )
        try:
            changed = await console.operator.pause_provider(command)
        except InvalidField as bad:
            return await _page(console, caller, error=f"{bad}", status=400)
        return Redirect(
            f"{PREFIX}/providers?done={'paused' if changed else 'unchanged'}", status_code=303
        )

    @post("/{provider:str}/resume", status_code=303)
    async def resume(
        self, request: Request[Any, Any, State], console: ConsoleParts, provider: FromPath[str]
    ) -> Redirect | Template:
        """Resume a paused provider."""
        caller = await staff(request, console)
        form = await request.form()
        check_form(request, caller.session.csrf, form.get(CSRF_FIELD), origin=console.origin)
        command = ProviderCommand(
            actor=caller.actor, provider=provider, reason=str(form.get("reason", ""))
        )
        try:
            changed = await console.operator.resume_provider(command)
        except InvalidField as bad:
            return await _page(console, caller, error=f"{bad}", status=400)
        return Redirect(
            f"{PREFIX}/providers?done={'resumed' if changed else 'unchanged'}", status_code=303
        )


async def _page(
    console: Console,
    caller: Staff,
    *,
    notice: str | None = None,
    error: str | None = None,
    status: int = 200,
) -> Template:
    pauses = await console.operator.pauses.pauses(actor=caller.actor)
    return page(
        "providers.html",
        caller.signed_in,
        status=status,
        section=SECTION,
        notice=notice,
        error=error,
        pauses=pauses,
        seen=sorted(PROVIDER_NAMES),
    )
