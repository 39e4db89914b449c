"""``outboxctl serve``: the HTTP API (identity routes, health, readiness, metrics)."""

from __future__ import annotations

import asyncio
import os

from entrypoints.bootstrap.processes import run_api
from entrypoints.cli.guard import run_guarded
from entrypoints.observability import configure_logging
from entrypoints.settings.tree import load_settings


def serve() -> None:
    """Serve the HTTP API on OUTBOX_HTTP_HOST:OUTBOX_HTTP_PORT until SIGINT or SIGTERM.

    The OpenAPI schema is at /schema (JSON: /schema/openapi.json). Run the migrations first
    (outboxctl db migrate); /readyz answers 503 until they are applied.
    """
    settings = run_guarded(lambda: load_settings(os.environ))
    configure_logging(settings.log_format, settings.log_level, development=settings.is_development)
    run_guarded(lambda: asyncio.run(run_api(settings)))
