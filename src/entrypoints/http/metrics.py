"""GET /metrics: the API process's Prometheus metrics."""

from __future__ import annotations

from litestar import Response, get
from litestar.handlers import HTTPRouteHandler
from prometheus_client import CollectorRegistry

from entrypoints.observability import render_metrics


def metrics_route(registry: CollectorRegistry) -> HTTPRouteHandler:
    """A route serving ``registry`` in the Prometheus text format."""

    @get("/metrics", tags=["health"], summary="Prometheus metrics", include_in_schema=True)
    async def metrics() -> Response[bytes]:
        body, content_type = render_metrics(registry)
        return Response(body, media_type=content_type)

    return metrics
