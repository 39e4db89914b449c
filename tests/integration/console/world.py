"""The admin app with the operator console, over the staff world's database and services.

A console client is an httpx client with its own cookie jar: it signs in through the pages
like a browser would (the sign-in form's CSRF token, the password, the step-up code the
provider received), and every later form carries the session's CSRF token from the page.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import httpx

from outbox.adapters.postgres.dispatch_store import PostgresDispatchStore
from outbox.domain.channels import Channel
from outbox.entrypoints.bootstrap.console import build_console
from outbox.entrypoints.bootstrap.operator import build_console_services
from outbox.entrypoints.http.app import create_admin_app
from outbox.entrypoints.http.console.context import Console
from outbox.entrypoints.observability import new_registry
from outbox.entrypoints.settings.tree import ConsoleSettings
from tests.integration.identity.api import PASSWORD, StatementLog, open_api_pool
from tests.integration.operator.staff_world import StaffWorld, running_staff_world

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
FORM_KEY = re.compile(r'name="idempotency_key" value="([^"]+)"')


def csrf_of(html: str) -> str:
    """The CSRF token a page's forms carry."""
    match = CSRF.search(html)
    assert match is not None, html
    return match.group(1)


def form_key_of(html: str) -> str:
    """The idempotency key a page's repair form carries."""
    match = FORM_KEY.search(html)
    assert match is not None, html
    return match.group(1)


@attrs.define
class ConsoleWorld:
    """The staff world plus the admin app with the console, and clients for it."""

    staff: StaffWorld
    console: Console
    app: Any

    def client(self) -> httpx.AsyncClient:
        """A new browser-like client: its own cookies, no redirects followed."""
        return httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app), base_url="http://127.0.0.1:8001"
        )

    async def signed_in(self, client: httpx.AsyncClient, email: str) -> str:
        """Sign ``client`` in through the page; return the step-up page's CSRF token."""
        page = await client.get("/console/sign-in")
        response = await client.post(
            "/console/sign-in",
            data={"csrf": csrf_of(page.text), "identifier": email, "password": PASSWORD},
        )
        assert 303 == response.status_code, response.text
        assert "/console/step-up?sent=1" == response.headers["location"]
        return csrf_of((await client.get("/console/step-up")).text)

    async def stepped_up(self, client: httpx.AsyncClient, email: str) -> str:
        """Sign in and confirm the step-up code the provider got; return the CSRF token."""
        csrf = await self.signed_in(client, email)
        code = _code((await self.staff.api.deliver_one()).content.text)
        response = await client.post("/console/step-up", data={"csrf": csrf, "code": code})
        assert 303 == response.status_code, response.text
        assert "/console/" == response.headers["location"]
        return csrf

    async def account(self, email: str, *, staff: bool = True) -> None:
        """An account that can sign in (and, with ``staff``, is made staff)."""
        await self.staff.api.signed_up(email)
        if staff:
            await self.staff.admin.grant_staff(email)

    def advance(self, delta: timedelta) -> None:
        """Move the identity module's and the console's clock forward."""
        self.staff.api.clock.advance(delta)


def _code(text: str) -> str:
    match = re.search(r"\b[0-9]{6,8}\b", text)
    assert match is not None, text
    return match.group(0)


async def running_console_world(
    database_url: str,
    dispatch_store: PostgresDispatchStore,
    data_dir: Path,
    *,
    unserved: frozenset[Channel] = frozenset(),
) -> AsyncIterator[ConsoleWorld]:
    """The staff world with the console on its admin app (``unserved``: channels with no
    provider)."""
    async for staff in running_staff_world(
        database_url, dispatch_store, data_dir, unserved=unserved
    ):
        pool = await open_api_pool(database_url, StatementLog(), role="staff_service")
        try:
            clock = staff.api.clock
            services = build_console_services(pool=pool, operator=staff.operator, clock=clock)
            console = build_console(
                ConsoleSettings(
                    enabled=True,
                    origin=None,
                    idle=timedelta(minutes=15),
                    lifetime=timedelta(hours=8),
                ),
                identity=staff.staff_services,
                operator=staff.operator,
                services=services,
                clock=clock.now,
            )
            app = create_admin_app(
                staff.staff_services,
                operator=staff.operator,
                registry=new_registry(),
                console=console,
            )
            yield ConsoleWorld(staff=staff, console=console, app=app)
        finally:
            await pool.close()


def now(world: ConsoleWorld) -> datetime:
    """The world's current time."""
    return world.staff.api.clock.now()
