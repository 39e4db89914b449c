"""Who is at the console: signed in, stepped up and staff; and whether a form is theirs.

Each check raises an error the console router turns into a redirect (sign in, step up) or a
refusal page; nothing is read or changed before every check a route needs has passed.
"""

from __future__ import annotations

import hmac
from typing import Any

import attrs
from litestar import Request
from litestar.datastructures import State

from outbox.application.identity.errors import Unauthenticated
from outbox.application.identity.principal import Principal
from outbox.application.operator.require_elevation import ElevationCheck
from outbox.application.staff import StaffActor, StepUpRequired
from outbox.entrypoints.http.console.context import Console
from outbox.entrypoints.http.console.sessions import ConsoleSession

CSRF_FIELD = "csrf"


class SignInNeeded(Exception):
    """No live console session: sign in first."""


class StepUpNeeded(Exception):
    """The session has no fresh step-up: confirm a code first."""


class FormRefused(Exception):
    """A form without this session's CSRF token, or from another origin."""


@attrs.frozen(kw_only=True)
class SignedIn:
    """A live console session and the identity's principal, checked with the database."""

    cookie: str
    session: ConsoleSession
    principal: Principal


@attrs.frozen(kw_only=True)
class Staff:
    """A signed-in, stepped-up caller; the database checks the staff membership per call."""

    signed_in: SignedIn
    actor: StaffActor

    @property
    def session(self) -> ConsoleSession:
        """The console session."""
        return self.signed_in.session


async def signed_in(request: Request[Any, Any, State], console: Console) -> SignedIn:
    """The live session; raises SignInNeeded (an expired one is forgotten)."""
    cookie = request.cookies.get(console.cookie)
    session = console.sessions.find(cookie)
    if cookie is None or session is None:
        raise SignInNeeded
    try:
        principal = await console.identity.authenticate(session.bearer)
    except Unauthenticated:
        console.sessions.end(cookie)  # the bearer session ended (signed out, revoked, expired)
        raise SignInNeeded from None
    return SignedIn(cookie=cookie, session=session, principal=principal)


async def staff(request: Request[Any, Any, State], console: Console) -> Staff:
    """The stepped-up caller; raises SignInNeeded or StepUpNeeded.

    A page (GET) needs a step-up made within READ_WINDOW; a command (POST) a fresh one, so
    an operator reads through an incident without a code every five minutes.
    """
    caller = await signed_in(request, console)
    reading = request.method in {"GET", "HEAD"}
    try:
        actor = await console.operator.require_elevation(
            ElevationCheck(
                principal=caller.principal,
                elevation_token=caller.session.elevation,
                reading=reading,
            )
        )
    except StepUpRequired:
        if reading:  # too old even to read with; a command's refusal keeps it for reading
            caller.session.elevation = None
        raise StepUpNeeded from None
    return Staff(signed_in=caller, actor=actor)


def check_form(
    request: Request[Any, Any, State],
    expected: str,
    presented: str | None,
    *,
    origin: str | None = None,
) -> None:
    """Raise FormRefused unless ``presented`` is ``expected`` and the form came from here.

    The token is the defence; a foreign Origin is refused as well (SameSite=Strict already
    keeps the cookie off cross-site requests). ``origin`` is the console's configured https
    origin (behind TLS the request's own scheme is the proxy's); else the request's own.
    """
    sent = request.headers.get("origin")
    if sent is not None and sent != (origin or _own_origin(request)):
        raise FormRefused
    if not presented or not _same(expected, presented):
        raise FormRefused


def _own_origin(request: Request[Any, Any, State]) -> str:
    return f"{request.url.scheme}://{request.url.netloc}"


def _same(expected: str, presented: str) -> bool:
    return hmac.compare_digest(expected.encode(), presented.encode())
