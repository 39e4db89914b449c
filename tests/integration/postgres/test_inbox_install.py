"""``outboxctl inbox install`` against a real server: the inbox alone, the same as a fully
migrated database's, installed once, upgraded by a later file, refused where it is not its own.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

from outbox.adapters.postgres import inbox_installer
from outbox.adapters.postgres.inbox_installer import install_inbox
from outbox.entrypoints.cli.exit_codes import ExitCode
from tests.outboxctl import invoke_outboxctl

pytestmark = pytest.mark.integration

# The inbox as the catalog holds it, its ledger left out: each query answers comparable rows.
CATALOG = {
    "schema": """
        SELECT n.nspowner::regrole::text, n.nspacl::text
        FROM pg_catalog.pg_namespace AS n WHERE n.nspname = 'inbox'
    """,
    "relations": """
        SELECT c.relname, c.relkind, c.relowner::regrole::text, c.relacl::text,
               c.reloptions::text
        FROM pg_catalog.pg_class AS c
        WHERE c.relnamespace = 'inbox'::regnamespace
          AND c.relname NOT IN ('migrations', 'migrations_pkey')
        ORDER BY 1
    """,
    "columns": """
        SELECT a.attrelid::regclass::text, a.attnum, a.attname,
               pg_catalog.format_type(a.atttypid, a.atttypmod), a.attnotnull,
               pg_catalog.pg_get_expr(d.adbin, d.adrelid), a.attacl::text
        FROM pg_catalog.pg_attribute AS a
        JOIN pg_catalog.pg_class AS c ON c.oid = a.attrelid
        LEFT JOIN pg_catalog.pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE c.relnamespace = 'inbox'::regnamespace
          AND c.relname NOT IN ('migrations', 'migrations_pkey')
          AND a.attnum > 0 AND NOT a.attisdropped
        ORDER BY 1, 2
    """,
    "constraints": """
        SELECT o.conrelid::regclass::text, o.conname, pg_catalog.pg_get_constraintdef(o.oid)
        FROM pg_catalog.pg_constraint AS o
        WHERE o.connamespace = 'inbox'::regnamespace
          -- the ledger's: its key, and its NOT NULLs where PostgreSQL 18 catalogs them
          AND o.conrelid::regclass::text <> 'inbox.migrations'
        ORDER BY 1, 2
    """,
    "indexes": """
        SELECT i.indexrelid::regclass::text, pg_catalog.pg_get_indexdef(i.indexrelid)
        FROM pg_catalog.pg_index AS i
        JOIN pg_catalog.pg_class AS c ON c.oid = i.indexrelid
        WHERE c.relnamespace = 'inbox'::regnamespace AND c.relname <> 'migrations_pkey'
        ORDER BY 1
    """,
    "triggers": """
        SELECT t.tgname, pg_catalog.pg_get_triggerdef(t.oid)
        FROM pg_catalog.pg_trigger AS t
        JOIN pg_catalog.pg_class AS c ON c.oid = t.tgrelid
        WHERE c.relnamespace = 'inbox'::regnamespace AND NOT t.tgisinternal
        ORDER BY 1
    """,
    "functions": """
        SELECT p.oid::regprocedure::text, pg_catalog.pg_get_functiondef(p.oid),
               p.proowner::regrole::text, p.proacl::text
        FROM pg_catalog.pg_proc AS p
        WHERE p.pronamespace = 'inbox'::regnamespace
        ORDER BY 1
    """,
}
OUTBOX_SCHEMAS = """
SELECT n.nspname FROM pg_catalog.pg_namespace AS n
WHERE n.nspname IN ('outbox', 'outbox_meta', 'identity', 'events', 'notifications')
"""
LEDGER = "SELECT version, name, applied_at FROM inbox.migrations ORDER BY version"


def _catalog(url: str) -> dict[str, list[tuple[Any, ...]]]:
    with psycopg.connect(url) as conn:
        return {name: conn.execute(query).fetchall() for name, query in CATALOG.items()}


def _rows(url: str, query: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(query).fetchall()


def _install(url: str, *options: str) -> Any:
    return invoke_outboxctl(
        "inbox", "install", *options, variables={"OUTBOX_INBOX_DATABASE_URL": url}
    )


async def test_an_installed_inbox_is_the_one_the_full_migrations_create(
    database_url: str, empty_database_url: str
) -> None:
    """Every definition (tables, constraints, indexes, functions, owners, grants) is equal, so
    the two ways to get an inbox cannot drift apart."""
    await install_inbox(empty_database_url)

    installed = _catalog(empty_database_url)

    assert _catalog(database_url) == installed
    assert 13 == len(installed["functions"])
    assert [] == _rows(empty_database_url, OUTBOX_SCHEMAS)


def test_a_second_install_changes_nothing_and_says_so(empty_database_url: str) -> None:
    first = _install(empty_database_url)
    ledger = _rows(empty_database_url, LEDGER)
    second = _install(empty_database_url, "--json")

    assert ExitCode.OK == first.returncode, first.stderr
    assert "applied 0025_inbox\napplied 0039_inbox_consumers_by_login\n" == first.stdout
    assert ExitCode.OK == second.returncode, second.stderr
    assert {"dryRun": False, "keptBy": "outboxctl inbox install", "applied": []} == json.loads(
        second.stdout
    )
    assert ledger == _rows(empty_database_url, LEDGER)


def test_a_dry_run_lists_the_files_and_changes_nothing(empty_database_url: str) -> None:
    result = _install(empty_database_url, "--dry-run", "--json")

    assert ExitCode.OK == result.returncode, result.stderr
    assert [25, 39] == [item["version"] for item in json.loads(result.stdout)["pending"]]
    assert [] == _rows(empty_database_url, "SELECT 1 FROM pg_namespace WHERE nspname = 'inbox'")


async def test_a_later_inbox_file_is_applied_by_the_next_install(
    empty_database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An inbox installed by older code (its first file only) gets the newer file alone."""
    monkeypatch.setattr(inbox_installer, "INBOX_FILES", ("0025_inbox",))
    older = await install_inbox(empty_database_url)
    monkeypatch.undo()

    newer = await install_inbox(empty_database_url)

    assert [25] == [migration.version for migration in older.migrations]
    assert [39] == [migration.version for migration in newer.migrations]
    assert [25, 39] == [row[0] for row in _rows(empty_database_url, LEDGER)]


def test_a_fully_migrated_database_keeps_its_inbox_and_install_changes_nothing(
    database_url: str,
) -> None:
    """db migrate keeps that inbox: a second ledger would apply the same files twice."""
    result = _install(database_url)

    assert ExitCode.OK == result.returncode, result.stderr
    assert "outboxctl db migrate, which keeps it" in result.stdout
    assert [(None,)] == _rows(database_url, "SELECT to_regclass('inbox.migrations')")


def test_a_database_the_full_migrations_have_not_brought_to_the_inbox_is_refused(
    empty_database_url: str,
) -> None:
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(
            "CREATE SCHEMA outbox_meta;"
            " CREATE TABLE outbox_meta.migrations (version integer PRIMARY KEY, name text,"
            " checksum text, applied_at timestamptz DEFAULT now());"
            " INSERT INTO outbox_meta.migrations (version, name, checksum)"
            " VALUES (1, 'roles_and_schemas', 'x')"
        )

    result = _install(empty_database_url)

    assert ExitCode.REFUSED == result.returncode
    assert "has not applied 0025_inbox yet: run outboxctl db migrate" in result.stderr


def test_a_schema_inbox_the_outbox_did_not_create_is_refused(empty_database_url: str) -> None:
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA inbox")

    result = _install(empty_database_url)

    assert ExitCode.REFUSED == result.returncode
    assert "a schema inbox exists that outboxctl inbox install did not create" in result.stderr


def test_an_inbox_installed_by_newer_code_is_refused(empty_database_url: str) -> None:
    _install(empty_database_url)
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO inbox.migrations (version, name, checksum)"
            " VALUES (9999, 'from_newer_code', 'unknown')"
        )

    result = _install(empty_database_url)

    assert ExitCode.FAILURE == result.returncode
    assert "9999_from_newer_code.sql is installed in this inbox but is no inbox file" in (
        result.stderr
    )


@pytest.fixture
def plain_login(empty_database_url: str) -> Iterator[str]:
    """The URL of a login that may connect and nothing more."""
    name = f"test_plain_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
    yield psycopg.conninfo.make_conninfo(empty_database_url, user=name)
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


def test_a_login_that_may_not_create_the_inbox_is_told_what_install_needs(
    plain_login: str,
) -> None:
    result = _install(plain_login)

    assert ExitCode.REFUSED == result.returncode
    assert "install it as the database's owner with CREATEROLE" in result.stderr


def test_without_a_database_url_install_names_the_variable() -> None:
    result = invoke_outboxctl("inbox", "install", variables={})

    assert ExitCode.CONFIGURATION == result.returncode
    assert "OUTBOX_INBOX_DATABASE_URL" in result.stderr
