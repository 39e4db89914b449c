"""Versioned SQL migrations: plain files applied in order, each in its own transaction.

The files form one global sequence. The runner refuses, naming the file: a ledger row no file
has (the database is newer than the code), an applied file whose text changed since, and a
pending file numbered below the newest applied one. A change to the schema is always a new
file with the next number.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path

import attrs
import psycopg
from psycopg import errors as pg_errors

from outbox.adapters.postgres.error_translation import translated_errors

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
_FILE_NAME = re.compile(r"(?P<version>\d{4})_(?P<name>[a-z0-9_]+)\.sql")

# Every migrator takes this transaction-level lock first, so two never interleave; it works
# behind PgBouncer in transaction mode because it ends with the transaction.
LOCK = (
    "SELECT pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended('outbox.migrations', 0))"
)
CREATE_LEDGER = """
CREATE SCHEMA IF NOT EXISTS outbox_meta;
CREATE TABLE IF NOT EXISTS outbox_meta.migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT pg_catalog.statement_timestamp()
)
"""
LEDGER_EXISTS = "SELECT pg_catalog.to_regclass('outbox_meta.migrations') IS NOT NULL"
APPLIED = "SELECT version, name, checksum, applied_at FROM outbox_meta.migrations ORDER BY version"
# A CREATEROLE login that is not a superuser may run the first migration, which creates
# outbox_owner and the job roles. From PostgreSQL 16 the creator of a role is granted it with
# the ADMIN option only, unless it asks for more: the first migration then finds it a member,
# grants nothing, and may not create the schemas as outbox_owner (42501). Asked here, it may
# set and inherit every role it creates, as a member made with GRANT would.
SELF_GRANT_SINCE = 160000
SELF_GRANT = "SET createrole_self_grant = 'set, inherit'"
RECORD = "INSERT INTO outbox_meta.migrations (version, name, checksum) VALUES (%s, %s, %s)"
FORGET_ALL = "DELETE FROM outbox_meta.migrations"
RECORD_AT = (
    "INSERT INTO outbox_meta.migrations (version, name, checksum, applied_at)"
    " VALUES (%s, %s, %s, %s)"
)

# Before the files formed one sequence, each context had its own hundred (0100 identity, 0200
# operator) and 0102 and 0300 replaced functions of earlier files. A database migrated by those
# files holds exactly this ledger, as (version, name, checksum); the files themselves are kept
# with the tests, which prove that 0001-0007 build the very same catalog.
LEGACY_LEDGER: tuple[tuple[int, str, str], ...] = (
    (1, "roles_and_schemas", "6dfaac701da37f61bfec51c93de633eec34d0b91fef321a87c0e5bea5b16de38"),
    (2, "queue_tables", "a69397441a8a9bdba324cc4b44f4c8626966a404e9c05141c5cd812e1530b312"),
    (3, "queue_functions", "f347e478ebdc999b73df9f063a8d160b35169c417ec1e65db6acfa1a66a37e0b"),
    (100, "identity_tables", "37cefdf3b10979d40fb4e795ac47d3afd186935b08f6b22ef92408eb7e084fe1"),
    (
        101,
        "identity_functions",
        "4ec10e863b598ace6c9079e9d941585f7e6b6d562e7dac319bfd65be64abb2f2",
    ),
    (
        102,
        "identity_magic_link_lookup",
        "3d55d4d1e9daf7c9245f8da22ccaf2098496beab3bfe2222ee59e5b67e6eab17",
    ),
    (200, "operator_tables", "cca0ea9cc04a42ceb2ee30fa894dc500bf3be7edf954225938956b747cf5194c"),
    (
        201,
        "operator_functions",
        "c1bd7271bdad2c26d9030139e12ef84d0105399cf6220fcec326e8d626edede0",
    ),
    (
        300,
        "attempt_lease_tokens",
        "3b80e8a7db7afda354fa69db481c0414db406a90df7497a6bc092fec5a8427b5",
    ),
)
# The files of the one sequence that replace the legacy ones: version -> (name, the legacy
# versions folded into it). A renumbered row keeps the latest applied_at of those it replaces.
LEGACY_FOLDS: Mapping[int, tuple[str, tuple[int, ...]]] = {
    1: ("roles_and_schemas", (1,)),
    2: ("queue_tables", (2, 300)),
    3: ("queue_functions", (3, 300)),
    4: ("identity_tables", (100,)),
    5: ("identity_functions", (101, 102)),
    6: ("operator_tables", (200,)),
    7: ("operator_functions", (201,)),
}


class MigrationError(Exception):
    """The migration files or the ledger are inconsistent; the message says which file."""


class MigrationRefused(MigrationError):
    """The migrating login may not do what a file does (42501); the message names the file,
    what the server refused and the grants the login needs."""

    HINT = (
        "the migrating login needs CREATEROLE and membership in outbox_owner and, from"
        " PostgreSQL 16, the ADMIN option on each outbox role another login created"
        " (docs/sql-api.md#roles)"
    )

    @classmethod
    def of(cls, migration: Migration, error: psycopg.Error) -> MigrationRefused:
        """Only the primary message travels: it names a role or an object, never a value."""
        refused = error.diag.message_primary or error.sqlstate or "permission denied"
        return cls(f"{_file_name(migration)}: {refused} (SQLSTATE 42501); {cls.HINT}")


@attrs.frozen(kw_only=True)
class Migration:
    """One SQL file: its version, name and the text applied."""

    version: int
    name: str
    sql: str = attrs.field(repr=False)

    @property
    def checksum(self) -> str:
        """SHA-256 of the file, kept in the ledger to notice an edited applied migration."""
        return hashlib.sha256(self.sql.encode("utf-8")).hexdigest()


@attrs.frozen(kw_only=True)
class MigrationStatus:
    """Whether one migration is applied, whether its file changed since, and whether it has one."""

    version: int
    name: str
    applied_at: datetime | None
    changed: bool = False
    has_file: bool = True

    @property
    def state(self) -> str:
        """``applied``, ``pending``, ``changed`` or ``no_file``.

        ``changed``: applied, but the file differs now. ``no_file``: applied, but no file here
        has it (the database was migrated by newer code).
        """
        if not self.has_file:
            return "no_file"
        if self.applied_at is None:
            return "pending"
        return "changed" if self.changed else "applied"


@attrs.frozen(kw_only=True)
class MigrationPlan:
    """What ``run_migrations`` would do now: rewrite a legacy ledger first, then apply these."""

    pending: tuple[Migration, ...]
    rewrites_legacy_ledger: bool = False


@attrs.frozen(kw_only=True)
class MigrationRun:
    """What ``run_migrations`` did: the files it applied, and whether it rewrote a legacy
    ledger (0100-0300) to the one sequence first."""

    applied: tuple[Migration, ...]
    rewrote_legacy_ledger: bool = False


# Called with each migration as it starts and once it is committed (progress displays).
OnMigration = Callable[[Migration], None]


def _ignore(_: Migration) -> None:
    """The default of the progress hooks."""


@attrs.frozen(kw_only=True)
class _LedgerRow:
    """One row of outbox_meta.migrations."""

    version: int
    name: str
    checksum: str
    applied_at: datetime

    @property
    def file_name(self) -> str:
        return f"{self.version:04d}_{self.name}.sql"


def load_migrations(directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    """Every ``NNNN_name.sql`` file in ``directory``, in version order."""
    migrations = []
    for path in sorted(directory.glob("*.sql")):
        match = _FILE_NAME.fullmatch(path.name)
        if match is None:
            raise MigrationError(f"{path.name}: expected NNNN_lower_snake_name.sql")
        migrations.append(
            Migration(
                version=int(match["version"]),
                name=match["name"],
                sql=path.read_text(encoding="utf-8"),
            )
        )
    versions = [migration.version for migration in migrations]
    if len(set(versions)) != len(versions):
        raise MigrationError("two migration files share a version number")
    return migrations


def _file_name(migration: Migration) -> str:
    return f"{migration.version:04d}_{migration.name}.sql"


def _known(migrations: Sequence[Migration] | None) -> list[Migration]:
    known = load_migrations() if migrations is None else list(migrations)
    return sorted(known, key=lambda migration: migration.version)


def _is_legacy(ledger: Sequence[_LedgerRow], known: Sequence[Migration]) -> bool:
    """The ledger is the whole legacy sequence, and the files here are the ones that replace it.

    When the files here are the legacy files themselves, the ledger matches them as it is.
    """
    if tuple((row.version, row.name, row.checksum) for row in ledger) != LEGACY_LEDGER:
        return False
    names = {migration.version: migration.name for migration in known}
    if all(names.get(version) == name for version, name, _ in LEGACY_LEDGER):
        return False
    return all(names.get(version) == name for version, (name, _) in LEGACY_FOLDS.items())


def _renumbered(ledger: Sequence[_LedgerRow], known: Sequence[Migration]) -> list[_LedgerRow]:
    """The rows of the one sequence that stand for a legacy ledger (see ``LEGACY_FOLDS``)."""
    applied_at = {row.version: row.applied_at for row in ledger}
    files = {migration.version: migration for migration in known}
    return [
        _LedgerRow(
            version=version,
            name=name,
            checksum=files[version].checksum,
            applied_at=max(applied_at[old] for old in folded),
        )
        for version, (name, folded) in LEGACY_FOLDS.items()
    ]


def _check(ledger: Sequence[_LedgerRow], known: Sequence[Migration]) -> None:
    """Raise MigrationError, naming the file, when the ledger and the files disagree.

    Every ledger row needs its file, same name and same text; a pending file must come after
    the newest applied one (applied now, a file slipped in below it would run after files
    that a fresh database runs after it, and the two databases could differ).
    """
    files = {migration.version: migration for migration in known}
    for row in ledger:
        migration = files.get(row.version)
        if migration is None:
            raise MigrationError(
                f"{row.file_name} is applied to this database but no such file exists here:"
                " the database was migrated by newer code (or another branch); run that code"
                " against it, or migrate a fresh database"
            )
        if migration.name != row.name:
            raise MigrationError(
                f"{row.file_name} is applied to this database, but version {row.version:04d}"
                f" here is {_file_name(migration)}: a migration file is never renamed or"
                " renumbered once applied"
            )
        if migration.checksum != row.checksum:
            raise MigrationError(
                f"{_file_name(migration)} changed after it was applied (checksum"
                f" {row.checksum[:12]}… applied, {migration.checksum[:12]}… now): an applied"
                " migration is never edited; restore the file and put the change in a new one"
            )
    if not ledger:
        return
    newest = ledger[-1]
    applied = {row.version for row in ledger}
    for migration in known:
        if migration.version not in applied and migration.version < newest.version:
            raise MigrationError(
                f"{_file_name(migration)} is pending but numbered below {newest.file_name},"
                " which is already applied: a new migration takes the next number after the"
                " newest applied one"
            )


async def _read_ledger(conn: psycopg.AsyncConnection) -> list[_LedgerRow]:
    cursor = await conn.execute(APPLIED)
    return [
        _LedgerRow(version=version, name=name, checksum=checksum, applied_at=applied_at)
        for version, name, checksum, applied_at in await cursor.fetchall()
    ]


async def _apply_next(
    conn: psycopg.AsyncConnection, known: Sequence[Migration], applying: OnMigration
) -> tuple[Migration | None, bool]:
    """In one transaction under the lock: check the ledger, apply the next pending file.

    A legacy ledger is first rewritten to the one sequence, in the same transaction. Returns
    the migration applied (None when every file is applied) and whether the ledger was
    rewritten.
    """
    async with conn.transaction():
        await conn.execute(LOCK)
        await conn.execute(CREATE_LEDGER)
        ledger = await _read_ledger(conn)
        rewrote = _is_legacy(ledger, known)
        if rewrote:
            ledger = _renumbered(ledger, known)
            await conn.execute(FORGET_ALL)
            for row in ledger:
                await conn.execute(RECORD_AT, (row.version, row.name, row.checksum, row.applied_at))
        _check(ledger, known)
        applied = {row.version for row in ledger}
        pending = [migration for migration in known if migration.version not in applied]
        if not pending:
            return None, rewrote
        migration = pending[0]
        applying(migration)
        try:
            await conn.execute(migration.sql.encode("utf-8"))
        except pg_errors.InsufficientPrivilege as error:
            raise MigrationRefused.of(migration, error) from None
        await conn.execute("RESET ROLE")
        await conn.execute(RECORD, (migration.version, migration.name, migration.checksum))
    return migration, rewrote


async def run_migrations(
    url: str,
    migrations: Sequence[Migration] | None = None,
    *,
    applying: OnMigration = _ignore,
    applied: OnMigration = _ignore,
) -> MigrationRun:
    """Apply every pending migration in order; say what was applied and whether a legacy
    ledger was rewritten.

    Each runs in its own transaction under the migration lock, after the ledger is re-read and
    checked there, so concurrent or repeated runs apply each file exactly once. A database
    migrated by the legacy files has its ledger rewritten to the one sequence first.
    ``applying`` and ``applied`` are called with each migration as it starts and once it is
    committed. Raises MigrationError, naming the file, when the ledger and the files disagree
    (see ``_check``), and StoreUnavailable when the database cannot be reached.
    """
    known = _known(migrations)
    done: list[Migration] = []
    rewrote_any = False
    with translated_errors():
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            if conn.info.server_version >= SELF_GRANT_SINCE:
                await conn.execute(SELF_GRANT)
            while True:
                migration, rewrote = await _apply_next(conn, known, applying)
                rewrote_any = rewrote_any or rewrote
                if migration is None:
                    break
                done.append(migration)
                applied(migration)
    return MigrationRun(applied=tuple(done), rewrote_legacy_ledger=rewrote_any)


async def apply_migrations(
    url: str, migrations: Sequence[Migration] | None = None
) -> list[Migration]:
    """Apply every pending migration in order and return those applied (none when up to date).

    ``run_migrations`` without the report; it raises the same errors.
    """
    return list((await run_migrations(url, migrations)).applied)


async def _ledger_now(url: str) -> list[_LedgerRow]:
    """The ledger as it is (empty before the first migration), read without the lock."""
    with translated_errors():
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            cursor = await conn.execute(LEDGER_EXISTS)
            exists = await cursor.fetchone()
            return await _read_ledger(conn) if exists is not None and exists[0] else []


async def plan_migrations(url: str, migrations: Sequence[Migration] | None = None) -> MigrationPlan:
    """What ``run_migrations`` would do now, changing nothing (``db migrate --dry-run``).

    Makes the same checks, so it raises the same MigrationError a run would, and
    StoreUnavailable when the database cannot be reached.
    """
    known = _known(migrations)
    ledger = await _ledger_now(url)
    legacy = _is_legacy(ledger, known)
    if legacy:
        ledger = _renumbered(ledger, known)
    _check(ledger, known)
    applied = {row.version for row in ledger}
    return MigrationPlan(
        pending=tuple(migration for migration in known if migration.version not in applied),
        rewrites_legacy_ledger=legacy,
    )


async def migration_status(
    url: str, migrations: Sequence[Migration] | None = None
) -> list[MigrationStatus]:
    """Every known migration with whether it is applied, then every applied one with no file.

    A legacy ledger is shown as the rows that ``apply_migrations`` will rewrite it to. Raises
    StoreUnavailable if the database cannot be reached.
    """
    known = _known(migrations)
    ledger = await _ledger_now(url)
    if _is_legacy(ledger, known):
        ledger = _renumbered(ledger, known)
    rows = {row.version: row for row in ledger}
    statuses = [
        MigrationStatus(
            version=migration.version,
            name=migration.name,
            applied_at=rows[migration.version].applied_at if migration.version in rows else None,
            changed=migration.version in rows
            and (rows[migration.version].checksum, rows[migration.version].name)
            != (migration.checksum, migration.name),
        )
        for migration in known
    ]
    versions = {migration.version for migration in known}
    statuses += [
        MigrationStatus(
            version=row.version, name=row.name, applied_at=row.applied_at, has_file=False
        )
        for row in ledger
        if row.version not in versions
    ]
    return sorted(statuses, key=lambda status: status.version)
