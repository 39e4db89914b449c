"""The inbox alone in a consuming service's database: its schema, tables, functions and role.

A service that only runs an inbox needs none of the outbox's other schemas. The installer
applies the files of the one migration sequence that make up the inbox (``INBOX_FILES``: the
very files ``outboxctl db migrate`` applies, so every inbox definition is written once) and
keeps its own ledger, ``inbox.migrations``, so the next install applies a later inbox file.
Everything runs in one transaction under the migrations' lock: an install is whole or absent.

Whose inbox it is decides what an install may do:

- the installer's (``inbox.migrations`` exists): the pending inbox files are applied;
- nobody's yet (no ``inbox`` schema, no ``outbox_meta.migrations``): the inbox is created;
- the full migrations' (``outbox_meta.migrations`` exists): ``db migrate`` keeps the inbox
  there, and two ledgers must never apply the same files. An install changes nothing and
  says so when every inbox file is applied, and is refused while one is missing (or when
  ``db migrate`` has run but not reached the inbox yet);
- a schema ``inbox`` that neither made: refused, it is not ours to change.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

import attrs
import psycopg

from outbox.adapters.postgres.error_translation import translated_errors
from outbox.adapters.postgres.migrator import LOCK, Migration, MigrationError, load_migrations

# The inbox's files of the one sequence, in order. A later file that changes the inbox
# changes nothing else, and is added here (a test checks every file touching it is listed).
INBOX_FILES = ("0025_inbox", "0039_inbox_consumers_by_login")

# The inbox's objects are owned by outbox_owner, as in a fully migrated database (the
# functions also let its members read any consumer): created when absent, as the first
# migration does, the installing login made a member, and functions it creates start with no
# grant to PUBLIC.
OWNER = """
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'outbox_owner') THEN
        BEGIN
            CREATE ROLE outbox_owner NOLOGIN;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;  -- an install in another database of the cluster created it meanwhile
        END;
    END IF;
    IF NOT pg_catalog.pg_has_role(current_user, 'outbox_owner', 'MEMBER') THEN
        EXECUTE pg_catalog.format('GRANT outbox_owner TO %I', current_user);
    END IF;
END
$$;
ALTER DEFAULT PRIVILEGES FOR ROLE outbox_owner REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;
"""
STATE = """
SELECT pg_catalog.to_regclass('inbox.migrations') IS NOT NULL,
       pg_catalog.to_regnamespace('inbox') IS NOT NULL,
       pg_catalog.to_regclass('outbox_meta.migrations') IS NOT NULL
"""
CREATE_LEDGER = """
SET LOCAL ROLE outbox_owner;
CREATE TABLE IF NOT EXISTS inbox.migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT pg_catalog.statement_timestamp()
);
RESET ROLE;
"""
INBOX_LEDGER = "SELECT version, name, checksum FROM inbox.migrations ORDER BY version"
FULL_LEDGER = "SELECT version, name FROM outbox_meta.migrations"
RECORD = "INSERT INTO inbox.migrations (version, name, checksum) VALUES (%s, %s, %s)"


class InboxInstallRefused(Exception):
    """The database's inbox is not the installer's to change; the message says what to run."""


class Keeper(enum.Enum):
    """Which ledger keeps a database's inbox."""

    INSTALLER = "outboxctl inbox install"
    FULL_MIGRATIONS = "outboxctl db migrate"


@attrs.frozen(kw_only=True)
class InboxInstall:
    """What an install did, or (planned) would do: the inbox files, and who keeps the inbox."""

    migrations: tuple[Migration, ...]
    keeper: Keeper = Keeper.INSTALLER


def file_name(migration: Migration) -> str:
    """``0025_inbox``: how the sequence and ``INBOX_FILES`` name a migration."""
    return f"{migration.version:04d}_{migration.name}"


def inbox_migrations(known: Sequence[Migration] | None = None) -> tuple[Migration, ...]:
    """The inbox's files, in order, taken from the one sequence (``known``: all its files)."""
    by_name = {file_name(migration): migration for migration in known or load_migrations()}
    missing = [name for name in INBOX_FILES if name not in by_name]
    if missing:
        raise MigrationError(f"{missing[0]}.sql, a file of the inbox, is missing")
    return tuple(by_name[name] for name in INBOX_FILES)


async def _pending(
    conn: psycopg.AsyncConnection, files: Sequence[Migration]
) -> tuple[Migration, ...] | None:
    """The inbox files to apply, or None when the full migrations keep this inbox and hold
    every file. Raises InboxInstallRefused or MigrationError (see the module's docstring)."""
    cursor = await conn.execute(STATE)
    row = await cursor.fetchone()
    if row is None:
        raise RuntimeError("the state query answered no row")
    ledger_exists, schema_exists, full_ledger_exists = row
    if ledger_exists:
        cursor = await conn.execute(INBOX_LEDGER)
        return _check(list(await cursor.fetchall()), files)
    if full_ledger_exists:
        cursor = await conn.execute(FULL_LEDGER)
        applied = {(version, name) for version, name in await cursor.fetchall()}
        missing = [m for m in files if (m.version, m.name) not in applied]
        if not missing:
            return None
        raise InboxInstallRefused(
            "this database is migrated by outboxctl db migrate (outbox_meta.migrations), which"
            f" has not applied {file_name(missing[0])} yet: run outboxctl db migrate, which"
            " keeps the inbox of a fully migrated database"
        )
    if schema_exists:
        raise InboxInstallRefused(
            "a schema inbox exists that outboxctl inbox install did not create (it has no"
            " inbox.migrations): it is not the outbox's to change; install into a database"
            " without one"
        )
    return tuple(files)


def _check(ledger: list[tuple[int, str, str]], files: Sequence[Migration]) -> tuple[Migration, ...]:
    """The files ``ledger`` lacks, after checking each row has its file, unchanged."""
    by_version = {migration.version: migration for migration in files}
    for version, name, checksum in ledger:
        migration = by_version.get(version)
        if migration is None or migration.name != name:
            raise MigrationError(
                f"{version:04d}_{name}.sql is installed in this inbox but is no inbox file"
                " here: the inbox was installed by newer code; run that code against it"
            )
        if migration.checksum != checksum:
            raise MigrationError(
                f"{file_name(migration)}.sql changed after it was installed: an applied"
                " migration is never edited; restore the file and put the change in a new one"
            )
    installed = {version for version, _, _ in ledger}
    pending = tuple(migration for migration in files if migration.version not in installed)
    if ledger and pending and pending[0].version < max(installed):
        raise MigrationError(
            f"{file_name(pending[0])}.sql is pending but numbered below an installed inbox"
            " file: a new inbox file takes the next number of the sequence"
        )
    return pending


async def plan_inbox_install(url: str) -> InboxInstall:
    """What ``install_inbox`` would do now, changing nothing (``--dry-run``).

    Raises what ``install_inbox`` raises.
    """
    files = inbox_migrations()
    with translated_errors():
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            pending = await _pending(conn, files)
    if pending is None:
        return InboxInstall(migrations=(), keeper=Keeper.FULL_MIGRATIONS)
    return InboxInstall(migrations=pending)


async def install_inbox(url: str) -> InboxInstall:
    """Create the inbox, or apply its pending files, in one transaction; say what was applied.

    Running it again changes nothing. Raises InboxInstallRefused when the inbox here is not
    the installer's, MigrationError when its ledger and the files disagree, PermissionDenied
    when the login may not create the roles or the schema, StoreUnavailable when the database
    cannot be reached.
    """
    files = inbox_migrations()
    with translated_errors():
        connect = psycopg.AsyncConnection.connect
        async with await connect(url, autocommit=True) as conn, conn.transaction():
            await conn.execute(LOCK)
            pending = await _pending(conn, files)
            if pending is None:
                return InboxInstall(migrations=(), keeper=Keeper.FULL_MIGRATIONS)
            if pending:
                await conn.execute(OWNER.encode("utf-8"))
            for migration in pending:
                await conn.execute(migration.sql.encode("utf-8"))
                await conn.execute("RESET ROLE")
                await conn.execute(CREATE_LEDGER.encode("utf-8"))
                await conn.execute(RECORD, (migration.version, migration.name, migration.checksum))
    return InboxInstall(migrations=pending)
