"""GET /metrics: the API process's Prometheus metrics."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

from litestar import Response, get
from litestar.handlers import HTTPRouteHandler
from prometheus_client import CollectorRegistry

from outbox.application.errors import ApplicationError
from outbox.entrypoints.observability import render_metrics


def metrics_route(
    registry: CollectorRegistry, *, refresh: Callable[[], Awaitable[object]] | None = None
) -> HTTPRouteHandler:
    """A route serving ``registry`` in the Prometheus text format.

    ``refresh`` runs before each scrape (the backlog gauges read the queue then); if the
    database cannot answer, the scrape still succeeds with the gauges as they were.
    """

    @get("/metrics", tags=["health"], summary="Prometheus metrics", include_in_schema=True)
    async def metrics() -> Response[bytes]:
        if refresh is not None:
            with contextlib.suppress(ApplicationError):
                await refresh()
        body, content_type = render_metrics(registry)
        # The client library's own content type, as is: given as a header, Litestar does not
        # append a second charset parameter (which Prometheus 3 refuses to scrape).
        return Response(body, media_type=content_type, headers={"content-type": content_type})

    return metrics
