"""``outboxctl``: the operator's command line, composed from one module per command group."""

from __future__ import annotations

import sys
from importlib.metadata import version
from typing import Annotated

import structlog
import typer

from outbox.entrypoints.cli.backlog import backlog
from outbox.entrypoints.cli.consumers import consume, consumers_app
from outbox.entrypoints.cli.db import db_app
from outbox.entrypoints.cli.dead_letters import dead_letters_app
from outbox.entrypoints.cli.doctor import doctor
from outbox.entrypoints.cli.events import events_app
from outbox.entrypoints.cli.exit_codes import ExitCode
from outbox.entrypoints.cli.inbox import inbox_app
from outbox.entrypoints.cli.keys import keys_app
from outbox.entrypoints.cli.messages import messages_app
from outbox.entrypoints.cli.nats import nats_app
from outbox.entrypoints.cli.notifications import notifications_app
from outbox.entrypoints.cli.providers import providers_app
from outbox.entrypoints.cli.serve import serve
from outbox.entrypoints.cli.staff import staff_app
from outbox.entrypoints.cli.suppressions import suppressions_app
from outbox.entrypoints.cli.up import up
from outbox.entrypoints.cli.worker import sweep, worker
from outbox.entrypoints.cli.workers import workers
from outbox.entrypoints.observability import log_format

# The distribution's name on the package index (the import root is ``outbox``).
DISTRIBUTION = "pg-outbox"

app = typer.Typer(
    name="outboxctl",
    help="Operate the outbox: run the service, the worker and sweeps; inspect and repair messages.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.command()(up)
app.add_typer(keys_app, name="keys")
app.add_typer(db_app, name="db")
app.command()(worker)
app.command()(sweep)
app.command()(serve)
app.command()(consume)
# Operator surfaces: read the queue, repair dead letters, manage staff.
app.command()(backlog)
app.add_typer(dead_letters_app, name="dead-letters")
app.add_typer(messages_app, name="messages")
app.add_typer(staff_app, name="staff")
app.add_typer(events_app, name="events")
app.add_typer(consumers_app, name="consumers")
app.add_typer(nats_app, name="nats")
app.add_typer(inbox_app, name="inbox")
app.add_typer(notifications_app, name="notifications")
app.add_typer(suppressions_app, name="suppressions")
app.add_typer(providers_app, name="providers")
app.command()(doctor)
app.command()(workers)


def _print_version(requested: bool) -> None:
    """Print ``outboxctl <version>`` and stop, before any command runs."""
    if requested:
        # The installed distribution's metadata, so pyproject.toml stays the one source.
        typer.echo(f"outboxctl {version(DISTRIBUTION)}")
        raise typer.Exit


@app.callback()
def _root(
    _version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    """Operate the outbox."""


def main() -> None:
    """Console-script entry point: an unexpected error is one log line and exit code 1.

    The line names the error and its code (SQLSTATE, errno) and nothing else: no traceback,
    no message, no locals, which is where secrets and personal data leak from.
    """
    try:
        app()
    except Exception as error:  # noqa: BLE001 - the last stop before a traceback
        if log_format():
            structlog.get_logger().exception("command.crashed", logger="outbox")
        else:  # before logging is set up: structlog's defaults would print the traceback
            sys.stderr.write(f"outboxctl failed: {type(error).__name__}\n")
        sys.exit(int(ExitCode.FAILURE))
