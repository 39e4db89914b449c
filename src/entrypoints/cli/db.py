"""``outboxctl db``: apply the SQL migrations, preview them, and show which are applied."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, TypeVar

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from outbox.adapters.postgres.migrator import (
    Migration,
    MigrationPlan,
    MigrationRun,
    migration_status,
    plan_migrations,
    run_migrations,
)
from outbox.adapters.postgres.schema_dump import current_schema
from outbox.entrypoints.bootstrap.database import resolve_database_url
from outbox.entrypoints.cli.guard import guarded
from outbox.entrypoints.cli.options import AsJson
from outbox.entrypoints.cli.output import lines, print_json, print_table, short_time, table
from outbox.entrypoints.cli.startup import start

db_app = typer.Typer(
    help="Migrate the database and show its migration status.", no_args_is_help=True
)

_T = TypeVar("_T")


def _with_database(action: Callable[[str], _T]) -> _T:
    """Run ``action`` with the configured (or embedded) database URL; map errors to exit codes."""
    settings = start()
    with guarded():
        return action(resolve_database_url(settings))


LEGACY_REWRITE = (
    "the ledger of the per-context files (0100-0300) to the one sequence 0001-0007 (same"
    " schema; see docs/operations.md)"
)


def _file(migration: Migration) -> str:
    return f"{migration.version:04d}_{migration.name}"


def _migration_json(migration: Migration) -> dict[str, object]:
    return {"version": migration.version, "name": migration.name, "checksum": migration.checksum}


def _with_progress(url: str, plan: MigrationPlan) -> MigrationRun:
    """Run the migrations under a progress bar on stderr (stdout keeps the report)."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, console=Console(stderr=True)) as progress:
        task = progress.add_task("migrating", total=len(plan.pending))

        def applying(migration: Migration) -> None:
            progress.update(task, description=f"applying {_file(migration)}")

        def applied(_: Migration) -> None:
            progress.advance(task)

        run = asyncio.run(run_migrations(url, applying=applying, applied=applied))
        progress.update(task, description="migrated", total=len(run.applied))
    return run


@db_app.command("migrate")
def migrate(
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Say what would be applied, and change nothing."),
    ] = False,
    as_json: AsJson = False,
) -> None:
    """Apply every pending migration in order; running it again changes nothing.

    A database migrated by the per-context files of the first milestone has its ledger
    rewritten to the one sequence first, and the command says so. --dry-run makes the same
    checks and lists what would be applied; outboxctl db sql prints its SQL.
    """

    def act(url: str) -> MigrationPlan | MigrationRun:
        plan = asyncio.run(plan_migrations(url))
        if dry_run:
            return plan
        if as_json or not plan.pending:
            return asyncio.run(run_migrations(url))
        return _with_progress(url, plan)

    outcome = _with_database(act)
    if isinstance(outcome, MigrationPlan):
        _report(outcome.pending, outcome.rewrites_legacy_ledger, dry_run=True, as_json=as_json)
    else:
        _report(outcome.applied, outcome.rewrote_legacy_ledger, dry_run=False, as_json=as_json)


def _report(
    migrations: tuple[Migration, ...], legacy: bool, *, dry_run: bool, as_json: bool
) -> None:
    """What migrate did, or with --dry-run would do: JSON, or one line per step."""
    if as_json:
        print_json(
            {
                "dryRun": dry_run,
                ("rewritesLegacyLedger" if dry_run else "rewroteLegacyLedger"): legacy,
                ("pending" if dry_run else "applied"): [_migration_json(m) for m in migrations],
            }
        )
        return
    rewrite, apply = ("would rewrite", "would apply") if dry_run else ("rewrote", "applied")
    if legacy:
        typer.echo(f"{rewrite} {LEGACY_REWRITE}")
    for migration in migrations:
        typer.echo(f"{apply} {_file(migration)}")
    if not migrations:
        typer.echo("up to date")


@db_app.command("sql")
def sql() -> None:
    """Print the SQL that outboxctl db migrate would apply now, file by file, for review.

    Nothing is applied. Each file runs in its own transaction under the migration lock and is
    then recorded in outbox_meta.migrations; prints nothing (and says so on stderr) when the
    database is up to date.
    """
    plan = _with_database(lambda url: asyncio.run(plan_migrations(url)))
    if plan.rewrites_legacy_ledger:
        typer.echo(f"-- First, in the first file's transaction: rewrite {LEGACY_REWRITE}.\n")
    for migration in plan.pending:
        typer.echo(f"-- {_file(migration)}.sql (sha256 {migration.checksum})")
        typer.echo("BEGIN;")
        typer.echo(migration.sql.rstrip("\n"))
        typer.echo(f"-- recorded as version {migration.version} in outbox_meta.migrations")
        typer.echo("COMMIT;\n")
    if not plan.pending:
        typer.echo("up to date: no SQL to apply", err=True)


@db_app.command("schema")
def schema(
    output: Annotated[
        Path | None,
        typer.Option("--output", help="Write it to this file instead of stdout."),
    ] = None,
) -> None:
    """Print every SQL object as a fresh migrate leaves it (the committed schema.sql).

    Made on a throwaway embedded PostgreSQL, by that distribution's pg_dump, so the text does
    not depend on the configured database or server; no configured database is touched.
    """
    with Console(stderr=True).status("migrating a throwaway database and dumping it"):
        text = current_schema()
    if output is None:
        typer.echo(text, nl=False)
        return
    output.write_text(text, encoding="utf-8")
    typer.echo(f"wrote {output}", err=True)


@db_app.command("status")
def status(as_json: AsJson = False) -> None:
    """List every migration as applied, pending, changed (applied, file edited since) or
    no_file (applied by newer code: no file of this version)."""
    statuses = _with_database(lambda url: asyncio.run(migration_status(url)))
    if as_json:
        print_json(
            [
                {
                    "version": item.version,
                    "name": item.name,
                    "state": item.state,
                    "appliedAt": item.applied_at,
                }
                for item in statuses
            ]
        )
        return
    rows = table("Version", "Name", "State", "Applied at (UTC)")
    for item in statuses:
        rows.add_row(
            lines(f"{item.version:04d}"),
            lines(item.name),
            lines(item.state),
            lines(short_time(item.applied_at)),
        )
    print_table(rows)
