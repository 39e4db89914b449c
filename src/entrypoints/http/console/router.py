"""The operator console's router on the admin listener: pages, assets, and the rules
every console response follows.

Every response carries a strict Content-Security-Policy (scripts, styles and images from this
origin only, no inline script or style, no framing), no caching, and no referrer. Requests
with a body must be forms; the guard's errors become redirects to sign in or step up, or a
refusal page. The JSON staff routes of the same listener keep their own rules.
"""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, Router
from litestar.datastructures import ResponseHeader, State
from litestar.di import Provide
from litestar.exceptions import HTTPException
from litestar.response import Redirect
from litestar.static_files import create_static_files_router
from litestar.status_codes import HTTP_415_UNSUPPORTED_MEDIA_TYPE

from outbox.application.staff import StaffRequired, StepUpRequired
from outbox.entrypoints.http.console.auth_pages import ConsoleAuthController
from outbox.entrypoints.http.console.consumer_pages import (
    ConsoleConsumersController,
    ConsoleWorkersController,
)
from outbox.entrypoints.http.console.context import PREFIX, Console
from outbox.entrypoints.http.console.event_pages import ConsoleEventsController
from outbox.entrypoints.http.console.guard import FormRefused, SignInNeeded, StepUpNeeded
from outbox.entrypoints.http.console.message_pages import ConsoleMessagesController
from outbox.entrypoints.http.console.overview_pages import ConsoleOverviewController
from outbox.entrypoints.http.console.provider_pages import ConsoleProvidersController
from outbox.entrypoints.http.console.rendering import STATIC
from outbox.entrypoints.http.console.suppression_pages import ConsoleSuppressionsController

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self';"
    " connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = [
    ResponseHeader(name="Content-Security-Policy", value=CONTENT_SECURITY_POLICY),
    ResponseHeader(name="X-Frame-Options", value="DENY"),
    ResponseHeader(name="X-Content-Type-Options", value="nosniff"),
    ResponseHeader(name="Referrer-Policy", value="same-origin"),
    ResponseHeader(name="Cross-Origin-Opener-Policy", value="same-origin"),
]
FORM_MEDIA_TYPE = "application/x-www-form-urlencoded"
_REFUSAL = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<link rel="stylesheet" href="/console/static/console.css"></head><body><main>
<section class="card narrow"><h1>{title}</h1><p>{message}</p>
<p><a href="/console/">Back to the console</a></p></section></main></body></html>"""


async def require_form_body(request: Request[Any, Any, State]) -> None:
    """Refuse a POST whose body is not a form (415)."""
    if request.method != "POST":
        return
    media_type = request.content_type[0].lower() if "content-type" in request.headers else ""
    if media_type != FORM_MEDIA_TYPE:
        raise HTTPException(
            status_code=HTTP_415_UNSUPPORTED_MEDIA_TYPE,
            detail=f"the body must be {FORM_MEDIA_TYPE}",
        )


def _to_sign_in(_: Request[Any, Any, State], __: Exception) -> Response[Any]:
    return Redirect(f"{PREFIX}/sign-in", status_code=303)


def _to_step_up(_: Request[Any, Any, State], __: Exception) -> Response[Any]:
    return Redirect(f"{PREFIX}/step-up", status_code=303)


def _refusal(status: int, title: str, message: str) -> Response[Any]:
    return Response(
        _REFUSAL.format(title=title, message=message), status_code=status, media_type="text/html"
    )


def _form_refused(_: Request[Any, Any, State], __: Exception) -> Response[Any]:
    return _refusal(
        403,
        "Form refused",
        "This form is not from your console session. Reload the page and try again.",
    )


def _not_staff(_: Request[Any, Any, State], __: Exception) -> Response[Any]:
    return _refusal(
        403,
        "Staff only",
        "Your account is not a staff member. The database operator grants staff with"
        " outboxctl staff grant.",
    )


def console_router(console: Console) -> Router:
    """The console's routes under /console/, with their dependency, hooks and headers."""

    def provide_console() -> Console:
        return console

    return Router(
        path="/",
        route_handlers=[
            ConsoleAuthController,
            ConsoleOverviewController,
            ConsoleMessagesController,
            ConsoleEventsController,
            ConsoleConsumersController,
            ConsoleWorkersController,
            ConsoleProvidersController,
            ConsoleSuppressionsController,
            create_static_files_router(
                path=f"{PREFIX}/static", directories=[STATIC], include_in_schema=False
            ),
        ],
        dependencies={"console": Provide(provide_console, sync_to_thread=False)},
        before_request=require_form_body,
        response_headers=SECURITY_HEADERS,
        exception_handlers={
            SignInNeeded: _to_sign_in,
            StepUpNeeded: _to_step_up,
            StepUpRequired: _to_step_up,  # the database found the elevation gone
            FormRefused: _form_refused,
            StaffRequired: _not_staff,
        },
        include_in_schema=False,
    )
