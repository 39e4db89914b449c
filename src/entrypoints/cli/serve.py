"""``outboxctl serve``: the HTTP API (identity routes, health, readiness, metrics)."""

from __future__ import annotations

import asyncio

from outbox.entrypoints.cli.guard import run_guarded
from outbox.entrypoints.cli.startup import start


def serve() -> None:
    """Serve the HTTP API on OUTBOX_HTTP_HOST:OUTBOX_HTTP_PORT until SIGINT or SIGTERM.

    The OpenAPI schema is at /schema (JSON: /schema/openapi.json). Run the migrations first
    (outboxctl db migrate); /readyz answers 503 until they are applied.
    """
    settings = start()
    from outbox.entrypoints.bootstrap.processes import run_api  # noqa: PLC0415 - only this command loads it

    run_guarded(lambda: asyncio.run(run_api(settings)))
