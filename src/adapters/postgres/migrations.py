"""Versioned SQL migrations: plain files applied in order, each in its own transaction."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import attrs
import psycopg

from adapters.postgres.error_translation import translated_errors

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
IS_APPLIED = "SELECT EXISTS (SELECT 1 FROM outbox_meta.migrations WHERE version = %s)"
RECORD = "INSERT INTO outbox_meta.migrations (version, name, checksum) VALUES (%s, %s, %s)"


class MigrationError(Exception):
    """The migration files or the ledger are inconsistent; the message says which file."""


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
    """Whether one known migration is applied, and whether its file changed since."""

    version: int
    name: str
    applied_at: datetime | None
    changed: bool = False

    @property
    def state(self) -> str:
        """``applied``, ``pending`` or ``changed`` (applied, but the file differs now)."""
        if self.applied_at is None:
            return "pending"
        return "changed" if self.changed else "applied"


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


async def apply_migrations(
    url: str, migrations: Sequence[Migration] | None = None
) -> list[Migration]:
    """Apply every pending migration in order and return those applied (none when up to date).

    Each runs in its own transaction under the migration lock and is re-checked there, so
    concurrent or repeated runs apply each file exactly once. Raises StoreUnavailable when the
    database cannot be reached.
    """
    todo = load_migrations() if migrations is None else list(migrations)
    applied: list[Migration] = []
    with translated_errors():
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            for migration in todo:
                async with conn.transaction():
                    await conn.execute(LOCK)
                    await conn.execute(CREATE_LEDGER)
                    cursor = await conn.execute(IS_APPLIED, (migration.version,))
                    row = await cursor.fetchone()
                    if row is not None and row[0]:
                        continue
                    await conn.execute(migration.sql.encode("utf-8"))
                    await conn.execute("RESET ROLE")
                    await conn.execute(
                        RECORD, (migration.version, migration.name, migration.checksum)
                    )
                applied.append(migration)
    return applied


async def migration_status(
    url: str, migrations: Sequence[Migration] | None = None
) -> list[MigrationStatus]:
    """Every known migration with whether it is applied; raises StoreUnavailable if unreachable."""
    known = load_migrations() if migrations is None else list(migrations)
    with translated_errors():
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            cursor = await conn.execute(LEDGER_EXISTS)
            exists = await cursor.fetchone()
            rows = []
            if exists is not None and exists[0]:
                cursor = await conn.execute(APPLIED)
                rows = await cursor.fetchall()
    ledger = {row[0]: (row[2], row[3]) for row in rows}
    return [
        MigrationStatus(
            version=migration.version,
            name=migration.name,
            applied_at=ledger[migration.version][1] if migration.version in ledger else None,
            changed=migration.version in ledger
            and ledger[migration.version][0] != migration.checksum,
        )
        for migration in known
    ]
