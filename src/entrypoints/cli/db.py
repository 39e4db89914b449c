"""``outboxctl db``: apply the SQL migrations and show which are applied."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Annotated, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from adapters.postgres.migrations import apply_migrations, migration_status
from entrypoints.bootstrap.database import resolve_database_url
from entrypoints.cli.guard import guarded
from entrypoints.cli.startup import start

db_app = typer.Typer(
    help="Migrate the database and show its migration status.", no_args_is_help=True
)

_T = TypeVar("_T")


def _with_database(action: Callable[[str], _T]) -> _T:
    """Run ``action`` with the configured (or embedded) database URL; map errors to exit codes."""
    settings = start()
    with guarded():
        return action(resolve_database_url(settings))


@db_app.command("migrate")
def migrate() -> None:
    """Apply every pending migration in order; running it again changes nothing."""
    applied = _with_database(lambda url: asyncio.run(apply_migrations(url)))
    for migration in applied:
        typer.echo(f"applied {migration.version:04d}_{migration.name}")
    if not applied:
        typer.echo("up to date")


@db_app.command("status")
def status(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
) -> None:
    """List every migration as applied, pending, changed (applied, file edited since) or
    no_file (applied by newer code: no file of this version)."""
    statuses = _with_database(lambda url: asyncio.run(migration_status(url)))
    if as_json:
        typer.echo(
            json.dumps(
                [
                    {
                        "version": item.version,
                        "name": item.name,
                        "state": item.state,
                        "applied_at": item.applied_at.isoformat() if item.applied_at else None,
                    }
                    for item in statuses
                ]
            )
        )
        return
    table = Table("Version", "Name", "State", "Applied at")
    for item in statuses:
        applied_at = item.applied_at.isoformat(timespec="seconds") if item.applied_at else ""
        table.add_row(f"{item.version:04d}", item.name, item.state, applied_at)
    Console().print(table)
