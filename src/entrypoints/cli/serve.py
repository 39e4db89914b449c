"""``outboxctl serve``: the HTTP API (identity routes, health, readiness, metrics)."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from outbox.entrypoints.bootstrap.served import Served
from outbox.entrypoints.cli.guard import run_guarded
from outbox.entrypoints.cli.startup import start


def serve(
    only: Annotated[
        Served,
        typer.Option(
            "--only",
            help=(
                "public: the identity API and the webhooks (login with identity_service);"
                " admin: the staff routes, console and metrics (login with staff_service,"
                " OUTBOX_ADMIN_DATABASE_URL); all: both in one process."
            ),
        ),
    ] = Served.ALL,
) -> None:
    """Serve the HTTP API on OUTBOX_HTTP_HOST:OUTBOX_HTTP_PORT until SIGINT or SIGTERM.

    The OpenAPI schema is at /schema (JSON: /schema/openapi.json). Run the migrations first
    (outboxctl db migrate); /readyz answers 503 until they are applied. In production run
    the admin listener as its own process (--only admin) with its own login.
    """
    from outbox.entrypoints.bootstrap.preflight import Needs  # noqa: PLC0415 - as below

    databases = (("DATABASE_URL",) if only.public else ()) + (
        ("ADMIN_DATABASE_URL",) if only.admin else ()
    )
    settings = start(needs=lambda _: Needs(databases=databases, seal_keys=True))
    from outbox.entrypoints.bootstrap.processes import run_api  # noqa: PLC0415 - only this command loads it

    run_guarded(lambda: asyncio.run(run_api(settings, only)))
