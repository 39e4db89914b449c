"""``outboxctl up``: the all-in-one development stack, in one process."""

from __future__ import annotations

import asyncio

import typer

from outbox.entrypoints.cli.exit_codes import ExitCode
from outbox.entrypoints.cli.guard import fail, run_guarded
from outbox.entrypoints.cli.startup import start

WELCOME = """\
outbox is up: API on {base} (OpenAPI at {base}/schema), worker and sweeps running.
Metrics and the staff routes are on the admin listener, {admin} (/metrics).
{console}Codes are printed here by the console provider. Try a sign-up:

  curl -s -X POST {base}/sign-ups -H 'content-type: application/json' \\
       -d '{{"identifier": "you@example.com"}}'

then confirm it with the code printed below, choosing the password:

  curl -s -X POST {base}/sign-ups/confirmations -H 'content-type: application/json' \\
       -d '{{"identifier": "you@example.com", "code": "<code>",
            "password": "correct horse battery staple"}}'

Stop with Ctrl-C.
"""
CONSOLE = """\
The operator console: {admin}/console/ (sign in as a staff member: outboxctl staff grant).
"""


def up() -> None:
    """Run everything for development: embedded PostgreSQL when OUTBOX_DATABASE_URL is unset,
    migrations, the HTTP API, the worker and its sweeps, and the console provider.
    """
    settings = start(providers=True)

    def announce(base: str, admin: str) -> None:
        console = CONSOLE.format(admin=admin) if settings.http.console.enabled else ""
        typer.echo(WELCOME.format(base=base, admin=admin, console=console), nl=False)

    try:
        from outbox.entrypoints.bootstrap.processes import run_stack  # noqa: PLC0415 - only this command loads it

        run_guarded(lambda: asyncio.run(run_stack(settings, announce=announce)))
    except OSError as error:
        raise fail(
            f"cannot listen on {settings.http.host}:{settings.http.port} ({error.strerror}); "
            "set OUTBOX_HTTP_PORT to a free port",
            ExitCode.CONFIGURATION,
        ) from None
