"""``outboxctl inbox install|received|dead-letters|replay``: a service's inbox of the relay's
stream.

The inbox lives in the consuming service's database (``OUTBOX_INBOX_DATABASE_URL``, else
``OUTBOX_DATABASE_URL``): ``install`` creates it there (as the database's operator), the
other commands read and change it as ``inbox_consumer``. A replay only marks the dead letter:
the service's running inbox (``run_inbox``) handles it again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar
from uuid import UUID

import typer

from outbox.adapters.postgres.inbox_installer import (
    InboxInstall,
    InboxInstallRefused,
    Keeper,
    file_name,
    install_inbox,
    plan_inbox_install,
)
from outbox.adapters.postgres.inbox_store import PostgresInboxStore
from outbox.application.errors import PermissionDenied
from outbox.entrypoints.cli.exit_codes import ExitCode
from outbox.entrypoints.cli.guard import fail, guarded, run_guarded
from outbox.entrypoints.cli.options import AsJson
from outbox.entrypoints.cli.output import print_json, print_table, short_time, table
from outbox.entrypoints.cli.startup import start
from outbox.entrypoints.settings.tree import Settings

_T = TypeVar("_T")
inbox_app = typer.Typer(
    help="Install a service's inbox of the relay's stream; see its receipts, dead letters,"
    " replays.",
    no_args_is_help=True,
)
Consumer = Annotated[str, typer.Argument(help="The inbox consumer (its durable's name).")]
Limit = Annotated[int, typer.Option("--limit", min=1, max=1000, help="At most this many.")]


def _inbox_url(settings: Settings) -> str:
    """The service's database: OUTBOX_INBOX_DATABASE_URL, else OUTBOX_DATABASE_URL (exit 3)."""
    url = settings.database.inbox_url or settings.database.url
    if not url:
        raise fail(
            "set OUTBOX_INBOX_DATABASE_URL (or OUTBOX_DATABASE_URL) to the service's database",
            ExitCode.CONFIGURATION,
        )
    return url


def _run(action: Callable[[PostgresInboxStore], Awaitable[_T]]) -> _T:
    # The inbox's composition root (NATS included) loads only when an inbox command runs.
    from outbox.entrypoints.bootstrap.inbox import inbox_store  # noqa: PLC0415

    settings = start()
    url = _inbox_url(settings)

    async def main() -> _T:
        async with inbox_store(url, strict=not settings.is_development) as store:
            return await action(store)

    return run_guarded(lambda: asyncio.run(main()))


@inbox_app.command("install")
def install(
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Say what would be applied, and change nothing."),
    ] = False,
    as_json: AsJson = False,
) -> None:
    """Create only what an inbox needs in the service's database, or apply its later files;
    running it again changes nothing.

    Schema inbox, its tables and functions, the roles inbox_consumer and outbox_owner; the
    login of the URL must be allowed to create them (the database's owner with CREATEROLE, or
    a superuser). A fully migrated database's inbox is left to outboxctl db migrate (nothing
    written; exit 6 while db migrate is behind); a schema inbox that neither created is
    refused with exit 6 (docs/consumers.md, "Installing the inbox").
    """
    url = _inbox_url(start())
    act = plan_inbox_install if dry_run else install_inbox
    with guarded():
        try:
            outcome = asyncio.run(act(url))
        except InboxInstallRefused as error:
            raise fail(f"refused: {error}", ExitCode.REFUSED) from None
        except PermissionDenied:
            raise fail(
                "the database login may not create the inbox (SQLSTATE 42501): install it as"
                " the database's owner with CREATEROLE, or as a superuser; the service's own"
                " login needs only inbox_consumer",
                ExitCode.REFUSED,
            ) from None
    _report_install(outcome, dry_run=dry_run, as_json=as_json)


def _report_install(outcome: InboxInstall, *, dry_run: bool, as_json: bool) -> None:
    """What install did, or with --dry-run would do: JSON, or one line per file."""
    if as_json:
        print_json(
            {
                "dryRun": dry_run,
                "keptBy": outcome.keeper.value,
                ("pending" if dry_run else "applied"): [
                    {"version": m.version, "name": m.name, "checksum": m.checksum}
                    for m in outcome.migrations
                ],
            }
        )
        return
    if outcome.keeper is Keeper.FULL_MIGRATIONS:
        typer.echo(
            "up to date: this database's inbox came with outboxctl db migrate, which keeps it;"
            " nothing to install"
        )
        return
    verb = "would apply" if dry_run else "applied"
    for migration in outcome.migrations:
        typer.echo(f"{verb} {file_name(migration)}")
    if not outcome.migrations:
        typer.echo("up to date: the inbox is installed; nothing changed")


@inbox_app.command("received")
def received(consumer: Consumer, limit: Limit = 50, as_json: AsJson = False) -> None:
    """The latest events the consumer handled, newest first."""
    rows = _run(lambda store: store.receipts(consumer, limit=limit))
    if as_json:
        print_json(
            {
                "items": [
                    {
                        "eventId": row.event_id,
                        "streamSequence": row.stream_sequence,
                        "receivedAt": row.received_at,
                    }
                    for row in rows
                ]
            }
        )
        return
    built = table("Event", "Stream sequence", "Received", ids=1)
    for row in rows:
        built.add_row(str(row.event_id), str(row.stream_sequence), short_time(row.received_at))
    print_table(built)


@inbox_app.command("dead-letters")
def dead_letters(consumer: Consumer, limit: Limit = 50, as_json: AsJson = False) -> None:
    """The consumer's dead letters, oldest first: subject, attempts, the error's class."""
    rows = _run(lambda store: store.dead_letters(consumer, limit=limit))
    if as_json:
        print_json(
            {
                "items": [
                    {
                        "eventId": row.event_id,
                        "subject": row.subject,
                        "eventType": row.headers.get("Outbox-Event-Type"),
                        "attempts": row.attempts,
                        "errorClass": row.error_class,
                        "deadLetteredAt": row.dead_lettered_at,
                        "replayRequestedAt": row.replay_requested_at,
                    }
                    for row in rows
                ]
            }
        )
        return
    built = table("Event", "Subject", "Attempts", "Error", "Dead-lettered", ids=1)
    for row in rows:
        built.add_row(
            str(row.event_id),
            row.subject,
            str(row.attempts),
            row.error_class,
            short_time(row.dead_lettered_at),
        )
    print_table(built)


@inbox_app.command("replay")
def replay(
    consumer: Consumer,
    event_id: Annotated[UUID, typer.Argument(help="The dead letter's event id.")],
    as_json: AsJson = False,
) -> None:
    """Mark a dead letter for the running inbox to handle again (in one transaction with its
    receipt); exit 5 when there is no such dead letter."""
    marked = _run(lambda store: store.request_replay(consumer, event_id))
    if not marked:
        raise fail(f"no dead letter {event_id} for {consumer}", ExitCode.NOT_FOUND)
    if as_json:
        print_json({"eventId": event_id, "replayRequested": True})
    else:
        typer.echo(f"replay of {event_id} requested: the running inbox handles it next")
