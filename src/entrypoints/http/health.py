"""GET /healthz (the process answers) and GET /readyz (database reachable, migrations current)."""

from __future__ import annotations

from litestar import Controller, Response, get
from litestar.openapi.datastructures import ResponseSpec
from litestar.status_codes import HTTP_200_OK, HTTP_503_SERVICE_UNAVAILABLE

from outbox.entrypoints.http.caller import Services
from outbox.entrypoints.http.schemas import Health


class HealthController(Controller):
    """Probes for orchestrators."""

    path = "/"
    tags = ["health"]  # noqa: RUF012 - Litestar reads a class attribute

    @get("/healthz", summary="Liveness: the process answers")
    async def healthz(self) -> Health:
        """Always ok while the process serves requests."""
        return Health(status="ok")

    @get(
        "/readyz",
        summary="Readiness: the database answers and every migration is applied",
        responses={
            HTTP_503_SERVICE_UNAVAILABLE: ResponseSpec(
                data_container=Health,
                description=(
                    "Not ready: status names the failing check (database_unreachable,"
                    " role_missing, migrations_pending) and hint what to do"
                ),
            )
        },
    )
    async def readyz(self, services: Services) -> Response[Health]:
        """200 when ready, else 503 naming the failing check (and pending migrations)."""
        report = await services.check_readiness()
        if report.ready:
            return Response(Health(status="ready"), status_code=HTTP_200_OK)
        return Response(
            Health(
                status=report.failed,
                pending_migrations=list(report.pending_migrations),
                missing_role=report.missing_role,
                hint=report.hint,
            ),
            status_code=HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": "5"},
        )
