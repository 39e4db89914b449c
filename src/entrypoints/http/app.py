"""The Litestar apps of the two listeners: ``create_app`` (public) and ``create_admin_app``.

Nothing is built at import time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from litestar import Litestar, Request
from litestar.datastructures import CacheControlHeader, State
from litestar.di import Provide
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin, SwaggerRenderPlugin
from litestar.openapi.spec import Components, SecurityScheme
from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.plugins.problem_details import ProblemDetailsConfig, ProblemDetailsPlugin
from litestar.template.config import TemplateConfig
from litestar.types import ControllerRouterHandler
from prometheus_client import CollectorRegistry

from outbox.application.identity.principal import Principal
from outbox.application.identity.services import IdentityServices
from outbox.application.operator.services import OperatorServices
from outbox.entrypoints.http.caller import SECURITY_SCHEME, client_address, principal
from outbox.entrypoints.http.console.context import Console
from outbox.entrypoints.http.console.rendering import template_config
from outbox.entrypoints.http.console.router import console_router
from outbox.entrypoints.http.health import HealthController
from outbox.entrypoints.http.hygiene import MAX_BODY_BYTES, require_json_body
from outbox.entrypoints.http.invitations import InvitationController
from outbox.entrypoints.http.magic_links import MagicLinkController
from outbox.entrypoints.http.metrics import metrics_route
from outbox.entrypoints.http.organizations import OrganizationController
from outbox.entrypoints.http.password_recoveries import PasswordRecoveryController
from outbox.entrypoints.http.problems import EXCEPTION_MAP, internal_error_handler
from outbox.entrypoints.http.sessions import SessionController
from outbox.entrypoints.http.sign_in_methods import SignInMethodController
from outbox.entrypoints.http.sign_ups import SignUpController
from outbox.entrypoints.http.staff_consumers import (
    StaffConsumersController,
    StaffWorkersController,
)
from outbox.entrypoints.http.staff_events import StaffEventsController
from outbox.entrypoints.http.staff_outbox import StaffOutboxController
from outbox.entrypoints.http.staff_problems import STAFF_EXCEPTION_MAP
from outbox.entrypoints.http.staff_providers import StaffProvidersController
from outbox.entrypoints.http.staff_suppressions import StaffSuppressionsController
from outbox.entrypoints.http.step_ups import StepUpController

OPENAPI_PATH = "/schema"
PUBLIC_DESCRIPTION = (
    "The reference Identity module: every route that sends a code or a link writes its outbox"
    " message in the same transaction as its challenge. Errors are RFC 9457 problem details"
    " with urn:outbox:problem:* types. Request bodies are application/json (415 otherwise),"
    " at most 16 KiB (413) and shallow (400)."
)
ADMIN_DESCRIPTION = (
    "The admin listener (loopback by default): Prometheus metrics and the staff routes over"
    " the security outbox and the tenant events outbox. Never expose it to the internet."
)


def create_app(
    services: IdentityServices,
    *,
    lifespan: Sequence[Callable[[Litestar], AbstractAsyncContextManager[None]]] = (),
    middleware: Sequence[Callable[[Any], Any]] = (),
) -> Litestar:
    """The public HTTP API: the identity routes and the probes, nothing else.

    OpenAPI at /schema (JSON at /schema/openapi.json); ``lifespan`` context managers open
    and close what the services use (pools, clients); ``middleware`` wraps every route
    (tracing).
    """
    return _litestar(
        [
            SignUpController,
            SessionController,
            SignInMethodController,
            PasswordRecoveryController,
            StepUpController,
            OrganizationController,
            InvitationController,
            MagicLinkController,
            HealthController,
        ],
        services=services,
        operator=None,
        title="outbox identity API",
        description=PUBLIC_DESCRIPTION,
        lifespan=lifespan,
        middleware=middleware,
    )


def create_admin_app(
    services: IdentityServices,
    *,
    operator: OperatorServices,
    registry: CollectorRegistry,
    console: Console | None = None,
) -> Litestar:
    """The admin listener's app: GET /metrics, the staff routes and the operator console.

    The staff routes (/platform-admin/security-outbox/...) authenticate with a bearer
    session of the identity module started here (POST /sessions, then POST /step-ups), so
    they take its ``services`` too, built over the admin listener's own pool (role
    ``staff_service``); the console (under /console/, when given) signs staff in with the
    same module. A session or elevation of the public listener never acts for staff.
    """

    async def refresh() -> None:
        await operator.messages.observe_backlog()
        await operator.events.observe_backlog()
        await operator.observe_delivery_states()
        await operator.observe_health()

    handlers: list[ControllerRouterHandler] = [
        metrics_route(registry, refresh=refresh),
        # Staff sign in and step up here: only this listener's role starts staff sessions.
        SessionController,
        StepUpController,
        HealthController,
        StaffOutboxController,
        StaffEventsController,
        StaffSuppressionsController,
        StaffProvidersController,
        StaffConsumersController,
        StaffWorkersController,
    ]
    if console is not None:
        handlers.append(console_router(console))
    return _litestar(
        handlers,
        services=services,
        operator=operator,
        title="outbox admin API",
        description=ADMIN_DESCRIPTION,
        template_config=template_config() if console is not None else None,
        # The console's origin loads no third-party script: the schema as JSON, no viewer.
        schema_viewer=False,
    )


def _litestar(
    handlers: Sequence[ControllerRouterHandler],
    *,
    services: IdentityServices,
    operator: OperatorServices | None,
    title: str,
    description: str,
    lifespan: Sequence[Callable[[Litestar], AbstractAsyncContextManager[None]]] = (),
    middleware: Sequence[Callable[[Any], Any]] = (),
    template_config: TemplateConfig[JinjaTemplateEngine] | None = None,
    schema_viewer: bool = True,
) -> Litestar:
    """One listener's app: the given routes, with the problem details and hygiene of all.

    ``schema_viewer`` serves Swagger UI (its script from a CDN) at /schema; without it the
    schema is JSON only, at /schema and /schema/openapi.json.
    """

    def provide_services() -> IdentityServices:
        return services

    async def provide_principal(request: Request[Any, Any, State]) -> Principal:
        return await principal(request)

    def provide_client(request: Request[Any, Any, State]) -> str:
        return client_address(request)

    def provide_operator() -> OperatorServices | None:
        return operator

    return Litestar(
        route_handlers=list(handlers),
        dependencies={
            "services": Provide(provide_services, sync_to_thread=False),
            "principal": Provide(provide_principal),
            "client": Provide(provide_client, sync_to_thread=False),
            "operator": Provide(provide_operator, sync_to_thread=False),
        },
        plugins=[
            ProblemDetailsPlugin(
                ProblemDetailsConfig(
                    enable_for_all_http_exceptions=True,
                    exception_to_problem_detail_map={**EXCEPTION_MAP, **STAFF_EXCEPTION_MAP},
                )
            )
        ],
        exception_handlers={Exception: internal_error_handler(services.telemetry)},
        before_request=require_json_body,
        request_max_body_size=MAX_BODY_BYTES,
        # Responses carry bearer, elevation and session tokens: no cache may keep any answer.
        cache_control=CacheControlHeader(no_store=True),
        openapi_config=OpenAPIConfig(
            title=title,
            version="0.1.0",
            description=description,
            path=OPENAPI_PATH,
            render_plugins=[SwaggerRenderPlugin()] if schema_viewer else [JsonRenderPlugin()],
            components=Components(
                security_schemes={SECURITY_SCHEME: SecurityScheme(type="http", scheme="bearer")}
            ),
        ),
        state=State({"services": services}),
        lifespan=list(lifespan),
        # Litestar's own logging config would add a plain-text root handler; its loggers
        # propagate to the one outbox.entrypoints.observability installs (JSON, redacted) instead.
        logging_config=None,
        middleware=list(middleware),
        template_config=template_config,
    )
