"""The console's overview: the page, and the fragment its script fetches every few seconds."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, get
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.response import Template

from outbox.entrypoints.http.console.chart import events_chart, security_chart
from outbox.entrypoints.http.console.context import PREFIX, Console
from outbox.entrypoints.http.console.guard import staff
from outbox.entrypoints.http.console.rendering import page

ConsoleParts = NamedDependency[Console]
SECTION = "Overview"


class ConsoleOverviewController(Controller):
    """Backlogs, lag, the last hour and the pauses at a glance."""

    path = PREFIX
    include_in_schema = False

    @get("/")
    async def overview(self, request: Request[Any, Any, State], console: ConsoleParts) -> Template:
        """The overview page."""
        return await self._render(request, console, "overview.html")

    @get("/overview/live")
    async def live(self, request: Request[Any, Any, State], console: ConsoleParts) -> Template:
        """The overview's live part alone (fetched by console.js)."""
        return await self._render(request, console, "overview_live.html")

    async def _render(
        self, request: Request[Any, Any, State], console: Console, name: str
    ) -> Template:
        caller = await staff(request, console)
        overview = await console.services.overview(caller.actor)
        return page(
            name,
            caller.signed_in,
            section=SECTION,
            overview=overview,
            charts=(security_chart(overview.activity), events_chart(overview.event_activity)),
            now=console.clock(),
        )
