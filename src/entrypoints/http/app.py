"""The Litestar application: ``create_app(services)`` builds it; nothing is built at import."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from litestar import Controller, Litestar, Request
from litestar.datastructures import State
from litestar.di import Provide
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import SwaggerRenderPlugin
from litestar.openapi.spec import Components, SecurityScheme
from litestar.plugins.problem_details import ProblemDetailsConfig, ProblemDetailsPlugin
from prometheus_client import CollectorRegistry

from application.identity.principal import Principal
from application.identity.services import IdentityServices
from application.operator.services import OperatorServices
from entrypoints.http.caller import SECURITY_SCHEME, client_address, principal
from entrypoints.http.health import HealthController
from entrypoints.http.invitations import InvitationController
from entrypoints.http.magic_links import MagicLinkController
from entrypoints.http.metrics import metrics_route
from entrypoints.http.organizations import OrganizationController
from entrypoints.http.password_recoveries import PasswordRecoveryController
from entrypoints.http.problems import EXCEPTION_MAP, internal_error_handler
from entrypoints.http.sessions import SessionController
from entrypoints.http.sign_in_methods import SignInMethodController
from entrypoints.http.sign_ups import SignUpController
from entrypoints.http.staff_outbox import StaffOutboxController
from entrypoints.http.staff_problems import STAFF_EXCEPTION_MAP
from entrypoints.http.step_ups import StepUpController

OPENAPI_PATH = "/schema"


def create_app(
    services: IdentityServices,
    *,
    registry: CollectorRegistry | None = None,
    lifespan: Sequence[Callable[[Litestar], AbstractAsyncContextManager[None]]] = (),
    operator: OperatorServices | None = None,
) -> Litestar:
    """The HTTP API over ``services``; OpenAPI at /schema (JSON at /schema/openapi.json).

    ``registry`` adds GET /metrics; ``lifespan`` context managers open and close what the
    services use (pools, clients); ``operator`` adds the staff routes
    (/platform-admin/security-outbox/...).
    """

    def provide_services() -> IdentityServices:
        return services

    async def provide_principal(request: Request[Any, Any, State]) -> Principal:
        return await principal(request)

    def provide_client(request: Request[Any, Any, State]) -> str:
        return client_address(request)

    refresh = operator.observe_backlog if operator is not None else None
    metrics = [metrics_route(registry, refresh=refresh)] if registry is not None else []
    # The staff routes (operator surfaces), when the operator services are given.
    staff: list[type[Controller]] = [StaffOutboxController] if operator is not None else []

    def provide_operator() -> OperatorServices | None:
        return operator

    return Litestar(
        route_handlers=[
            *metrics,
            SignUpController,
            SessionController,
            SignInMethodController,
            PasswordRecoveryController,
            StepUpController,
            OrganizationController,
            InvitationController,
            MagicLinkController,
            HealthController,
            *staff,
        ],
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
        openapi_config=OpenAPIConfig(
            title="outbox identity API",
            version="0.1.0",
            description=(
                "The reference Identity module: every route that sends a code or a link writes"
                " its outbox message in the same transaction as its challenge. Errors are RFC"
                " 9457 problem details with urn:outbox:problem:* types."
            ),
            path=OPENAPI_PATH,
            render_plugins=[SwaggerRenderPlugin()],
            components=Components(
                security_schemes={SECURITY_SCHEME: SecurityScheme(type="http", scheme="bearer")}
            ),
        ),
        state=State({"services": services}),
        lifespan=list(lifespan),
        # Litestar's own logging config would add a plain-text root handler; its loggers
        # propagate to the one entrypoints.observability installs (JSON, redacted) instead.
        logging_config=None,
    )
