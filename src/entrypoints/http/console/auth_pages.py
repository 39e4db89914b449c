"""Sign in, step up and sign out of the console, through the identity module's own use cases."""

from __future__ import annotations

import secrets
from typing import Any

from litestar import Controller, Request, get, post
from litestar.datastructures import Cookie, State
from litestar.di import NamedDependency
from litestar.response import Redirect, Template

from outbox.application.errors import ApplicationError
from outbox.application.identity.confirm_step_up import ConfirmStepUpCommand
from outbox.application.identity.errors import InvalidCredentials, RateLimited
from outbox.application.identity.request_step_up import RequestStepUpCommand
from outbox.application.identity.sign_in import SignInCommand
from outbox.domain.channels import Channel
from outbox.entrypoints.http.caller import client_address
from outbox.entrypoints.http.console.context import PREFIX, Console
from outbox.entrypoints.http.console.guard import (
    CSRF_FIELD,
    SignedIn,
    SignInNeeded,
    check_form,
    signed_in,
)
from outbox.entrypoints.http.console.rendering import page
from outbox.entrypoints.http.console.sessions import PRE_COOKIE

ConsoleParts = NamedDependency[Console]


def _pre_cookie(console: Console, value: str) -> Cookie:
    return Cookie(
        key=PRE_COOKIE,
        value=value,
        path=PREFIX,
        httponly=True,
        secure=console.secure,
        samesite="strict",
    )


def session_cookie(console: Console, value: str, *, max_age: int | None = None) -> Cookie:
    """The session cookie (``max_age`` 0 deletes it)."""
    return Cookie(
        key=console.cookie,
        value=value,
        path="/",
        httponly=True,
        secure=console.secure,
        samesite="strict",
        max_age=max_age,
    )


class ConsoleAuthController(Controller):
    """The console's doors: sign-in, step-up and sign-out pages."""

    path = PREFIX
    include_in_schema = False

    @get("/sign-in")
    async def sign_in_page(
        self, request: Request[Any, Any, State], console: ConsoleParts
    ) -> Template:
        """The sign-in form, with a signed-out CSRF token in a cookie and the form."""
        token = request.cookies.get(PRE_COOKIE) or secrets.token_urlsafe(32)
        response = page("sign_in.html", None, title="Sign in", csrf=token)
        response.cookies.append(_pre_cookie(console, token))
        return response

    @post("/sign-in", status_code=303)
    async def sign_in(
        self, request: Request[Any, Any, State], console: ConsoleParts
    ) -> Redirect | Template:
        """Check the password with the identity module, start a session, send a code."""
        form = await request.form()
        check_form(
            request,
            request.cookies.get(PRE_COOKIE) or "",
            form.get(CSRF_FIELD),
            origin=console.origin,
        )
        client = client_address(request)
        try:
            grant = await console.identity.sign_in(
                SignInCommand(
                    identifier=str(form.get("identifier", "")),
                    password=str(form.get("password", "")),
                    client_address=client,
                )
            )
        except (InvalidCredentials, RateLimited) as refused:
            message = (
                "Too many tries: wait a moment and try again."
                if isinstance(refused, RateLimited)
                else "That identifier and password do not match a verified account."
            )
            token = secrets.token_urlsafe(32)
            response = page(
                "sign_in.html", None, status=401, title="Sign in", error=message, csrf=token
            )
            response.cookies.append(_pre_cookie(console, token))
            return response
        old = request.cookies.get(console.cookie)
        console.sessions.end(old)
        cookie = console.sessions.start(
            identity_id=grant.identity_id, bearer=grant.token, bearer_expires_at=grant.expires_at
        )
        caller = await signed_in_with(console, cookie)
        sent = await _send_code(console, caller, client)
        redirect = Redirect(f"{PREFIX}/step-up?{'sent=1' if sent else 'paced=1'}", status_code=303)
        redirect.cookies.append(session_cookie(console, cookie))
        redirect.cookies.append(_pre_cookie(console, secrets.token_urlsafe(32)))
        return redirect

    @get("/step-up")
    async def step_up_page(
        self, request: Request[Any, Any, State], console: ConsoleParts
    ) -> Template:
        """The code form."""
        caller = await signed_in(request, console)
        return page(
            "step_up.html",
            caller,
            title="Step up",
            sent=request.query_params.get("sent") == "1",
            paced=request.query_params.get("paced") == "1",
            blocked=await _paused_code_provider(console),
        )

    @post("/step-up/code", status_code=303)
    async def send_code(
        self, request: Request[Any, Any, State], console: ConsoleParts
    ) -> Redirect | Template:
        """Ask the identity module for a step-up code (it goes to the sign-in address)."""
        caller = await signed_in(request, console)
        form = await request.form()
        check_form(request, caller.session.csrf, form.get(CSRF_FIELD), origin=console.origin)
        try:
            await _send_code(console, caller, client_address(request), strict=True)
        except RateLimited:
            return page(
                "step_up.html",
                caller,
                status=429,
                title="Step up",
                sent=False,
                paced=True,
                error="No new code was sent: one went out moments ago. Wait a little before"
                " asking again.",
            )
        return Redirect(f"{PREFIX}/step-up?sent=1", status_code=303)

    @post("/step-up", status_code=303)
    async def confirm(
        self, request: Request[Any, Any, State], console: ConsoleParts
    ) -> Redirect | Template:
        """Confirm the code; the elevation token stays in the session, never in the page."""
        caller = await signed_in(request, console)
        form = await request.form()
        check_form(request, caller.session.csrf, form.get(CSRF_FIELD), origin=console.origin)
        try:
            grant = await console.identity.confirm_step_up(
                ConfirmStepUpCommand(
                    principal=caller.principal,
                    code=str(form.get("code", "")).strip(),
                    client_address=client_address(request),
                )
            )
        except ApplicationError:
            return page(
                "step_up.html",
                caller,
                status=400,
                title="Step up",
                sent=True,
                error="That code is wrong or expired. Ask for a new one if it keeps failing.",
            )
        caller.session.elevation = grant.token
        caller.session.elevation_expires_at = grant.expires_at
        return Redirect(f"{PREFIX}/", status_code=303)

    @post("/sign-out", status_code=303)
    async def sign_out(self, request: Request[Any, Any, State], console: ConsoleParts) -> Redirect:
        """End the bearer session and the console session."""
        caller = await signed_in(request, console)
        form = await request.form()
        check_form(request, caller.session.csrf, form.get(CSRF_FIELD), origin=console.origin)
        await console.identity.sign_out(caller.principal)
        console.sessions.end(caller.cookie)
        redirect = Redirect(f"{PREFIX}/sign-in", status_code=303)
        redirect.cookies.append(session_cookie(console, "", max_age=0))
        return redirect


async def signed_in_with(console: Console, cookie: str) -> SignedIn:
    """The session a fresh cookie names, authenticated."""
    session = console.sessions.find(cookie)
    if session is None:
        raise SignInNeeded
    principal = await console.identity.authenticate(session.bearer)
    return SignedIn(cookie=cookie, session=session, principal=principal)


async def _paused_code_provider(console: Console) -> str | None:
    """The provider that sends step-up codes (the email channel's), when staff paused it: no
    code can arrive, so the page says so and how to break glass."""
    provider = console.services.repair_matching.router.routes.provider_for(Channel.EMAIL)
    if provider is None:
        return None
    return provider if provider in await console.services.paused.paused() else None


async def _send_code(
    console: Console, caller: SignedIn, client: str, *, strict: bool = False
) -> bool:
    """Ask for a step-up code; whether one was sent. A limit hit right after sign-in is not
    an error to show (the page says no new code went out); ``strict`` raises RateLimited."""
    try:
        await console.identity.request_step_up(
            RequestStepUpCommand(principal=caller.principal, client_address=client)
        )
    except RateLimited:
        if strict:
            raise
        return False
    return True
