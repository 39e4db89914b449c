"""One migration sequence: refusals that name the file, and the upgrade from the legacy files.

legacy_migrations/ holds, verbatim, the files the first milestone shipped (numbered per
context: 0100 identity, 0200 operator, 0300 a change to 0003). A database they migrated has
its ledger rewritten to 0001-0007, which is only sound because those build the very same
catalog; the first tests here prove it fact by fact.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
import pytest
from psycopg import errors

from outbox.adapters.postgres.migrator import (
    LEGACY_LEDGER,
    Migration,
    MigrationError,
    apply_migrations,
    load_migrations,
    migration_status,
)

if TYPE_CHECKING:
    from tests.postgres_server import TestServer

pytestmark = pytest.mark.integration

LEGACY_DIR = Path(__file__).with_name("legacy_migrations")
SCHEMAS = ["outbox", "identity", "outbox_meta"]


def _acl(column: str) -> str:
    """An ACL column as a sorted array of aclitem texts (grant order is no difference)."""
    return f"(SELECT array_agg(x::text ORDER BY x::text) FROM unnest({column}) AS x)"


# Catalog facts of the three schemas, by name (never by oid, which differs between databases).
CATALOG: dict[str, str] = {
    "schemas": f"""
        SELECT n.nspname, pg_get_userbyid(n.nspowner), {_acl("n.nspacl")}
        FROM pg_namespace AS n WHERE n.nspname = ANY(%(schemas)s)
    """,
    "relations": f"""
        SELECT n.nspname, c.relname, c.relkind, pg_get_userbyid(c.relowner), {_acl("c.relacl")},
               c.relpersistence, c.reloptions::text, c.relrowsecurity, c.relforcerowsecurity
        FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
        WHERE n.nspname = ANY(%(schemas)s)
    """,
    "columns": f"""
        SELECT n.nspname, c.relname, a.attnum, a.attname,
               format_type(a.atttypid, a.atttypmod), a.attnotnull,
               pg_get_expr(d.adbin, d.adrelid), a.attidentity, a.attgenerated,
               {_acl("a.attacl")}, co.collname
        FROM pg_attribute AS a
        JOIN pg_class AS c ON c.oid = a.attrelid
        JOIN pg_namespace AS n ON n.oid = c.relnamespace
        LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        LEFT JOIN pg_collation AS co ON co.oid = a.attcollation
        WHERE n.nspname = ANY(%(schemas)s) AND a.attnum > 0 AND NOT a.attisdropped
    """,
    "constraints": """
        SELECT n.nspname, c.conrelid::regclass::text, c.conname, c.contype,
               pg_get_constraintdef(c.oid, true), c.condeferrable, c.condeferred,
               c.convalidated
        FROM pg_constraint AS c JOIN pg_namespace AS n ON n.oid = c.connamespace
        WHERE n.nspname = ANY(%(schemas)s)
    """,
    "indexes": """
        SELECT schemaname, tablename, indexname, indexdef
        FROM pg_indexes WHERE schemaname = ANY(%(schemas)s)
    """,
    "functions": f"""
        SELECT p.oid::regprocedure::text, pg_get_userbyid(p.proowner),
               pg_get_functiondef(p.oid), {_acl("p.proacl")}
        FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace
        WHERE n.nspname = ANY(%(schemas)s)
    """,
    "triggers": """
        SELECT t.tgrelid::regclass::text, t.tgname, pg_get_triggerdef(t.oid, true), t.tgenabled
        FROM pg_trigger AS t
        JOIN pg_class AS c ON c.oid = t.tgrelid
        JOIN pg_namespace AS n ON n.oid = c.relnamespace
        WHERE n.nspname = ANY(%(schemas)s) AND NOT t.tgisinternal
    """,
    "sequences": """
        SELECT schemaname, sequencename, data_type::text, start_value, min_value, max_value,
               increment_by, cycle, cache_size
        FROM pg_sequences WHERE schemaname = ANY(%(schemas)s)
    """,
    "types": """
        SELECT n.nspname, t.typname, t.typtype, pg_get_userbyid(t.typowner)
        FROM pg_type AS t JOIN pg_namespace AS n ON n.oid = t.typnamespace
        WHERE n.nspname = ANY(%(schemas)s)
    """,
    "policies": """
        SELECT p.polrelid::regclass::text, p.polname, p.polcmd,
               pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid)
        FROM pg_policy AS p
    """,
    "comments": """
        SELECT pg_describe_object(d.classoid, d.objoid, d.objsubid), d.description
        FROM pg_description AS d WHERE d.objoid >= 16384
    """,
    "default_privileges": f"""
        SELECT pg_get_userbyid(d.defaclrole), d.defaclnamespace::regnamespace::text,
               d.defaclobjtype, {_acl("d.defaclacl")}
        FROM pg_default_acl AS d
    """,
}
LEDGER = "SELECT version, name, checksum FROM outbox_meta.migrations ORDER BY version"
APPLIED_AT = "SELECT version, applied_at FROM outbox_meta.migrations ORDER BY version"


async def _rows(url: str, query: str, params: object = None) -> list[tuple[object, ...]]:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cursor = await conn.execute(query, params)  # type: ignore[arg-type]
        return await cursor.fetchall()


async def _catalog(url: str) -> dict[str, list[tuple[object, ...]]]:
    """Every fact of CATALOG, sorted, so two databases compare as two dicts."""
    return {
        fact: sorted(await _rows(url, query, {"schemas": SCHEMAS}), key=repr)
        for fact, query in CATALOG.items()
    }


def _legacy() -> list[Migration]:
    return load_migrations(LEGACY_DIR)


def _new_up_to(version: int) -> list[Migration]:
    return [migration for migration in load_migrations() if migration.version <= version]


def _after_legacy() -> list[Migration]:
    """The files a legacy database (0001-0007) still has to apply: 0008 and every later one."""
    return [migration for migration in load_migrations() if migration.version > 7]


@pytest.fixture
def second_empty_database_url(postgres_server: TestServer) -> Iterator[str]:
    """Another fresh database with no migration applied, dropped after the test."""
    name = postgres_server.create_database(prefix="outbox_empty")
    try:
        yield postgres_server.url(name)
    finally:
        postgres_server.drop_database(name)


def _after_legacy() -> list[Migration]:
    """The files a legacy database still needs once its ledger reads 0001-0007."""
    return [m for m in load_migrations() if m.version > 7]


def test_the_fixture_files_are_the_legacy_ledger():
    """The runner recognises a legacy database by LEGACY_LEDGER; the fixtures are its files."""
    assert LEGACY_LEDGER == tuple((m.version, m.name, m.checksum) for m in _legacy())


async def test_the_legacy_files_and_0001_to_0007_build_the_same_catalog(
    empty_database_url, second_empty_database_url
):
    """The premise of the ledger rewrite: a legacy database already is 0001-0007."""
    await apply_migrations(empty_database_url, _legacy())
    await apply_migrations(second_empty_database_url, _new_up_to(7))

    legacy, renumbered = (
        await _catalog(empty_database_url),
        await _catalog(second_empty_database_url),
    )
    assert legacy["functions"], "the dump reads nothing"
    assert legacy == renumbered


async def test_a_legacy_database_upgraded_equals_one_migrated_from_scratch(
    empty_database_url, database_url
):
    await apply_migrations(empty_database_url, _legacy())

    upgraded = await apply_migrations(empty_database_url)

    assert [(m.version, m.name) for m in _after_legacy()] == [(m.version, m.name) for m in upgraded]
    assert await _catalog(database_url) == await _catalog(empty_database_url)
    assert await _rows(database_url, LEDGER) == await _rows(empty_database_url, LEDGER)


async def test_a_legacy_ledger_is_rewritten_once_and_a_rerun_changes_nothing(
    empty_database_url,
):
    await apply_migrations(empty_database_url, _legacy())
    legacy_at = dict(await _rows(empty_database_url, APPLIED_AT))
    statuses = await migration_status(empty_database_url)
    assert [(m.version, "applied") for m in _new_up_to(7)] + [
        (m.version, "pending") for m in _after_legacy()
    ] == [(status.version, status.state) for status in statuses]

    await apply_migrations(empty_database_url)
    ledger = await _rows(empty_database_url, LEDGER)
    applied_at = await _rows(empty_database_url, APPLIED_AT)

    assert [(m.version, m.name, m.checksum) for m in load_migrations()] == ledger
    # A rewritten row keeps the latest applied_at of the legacy rows folded into it.
    assert legacy_at[300] == dict(applied_at)[3]
    assert legacy_at[102] == dict(applied_at)[5]
    assert legacy_at[201] == dict(applied_at)[7]
    assert [] == await apply_migrations(empty_database_url)
    assert applied_at == await _rows(empty_database_url, APPLIED_AT)
    assert {"applied"} == {status.state for status in await migration_status(empty_database_url)}


async def test_concurrent_migrators_rewrite_a_legacy_ledger_once(empty_database_url):
    await apply_migrations(empty_database_url, _legacy())

    results = await asyncio.gather(*(apply_migrations(empty_database_url) for _ in range(3)))

    assert [m.version for m in _after_legacy()] == sorted(
        m.version for result in results for m in result
    )
    ledger = await _rows(empty_database_url, LEDGER)
    assert [(m.version, m.name, m.checksum) for m in load_migrations()] == ledger


async def test_the_legacy_files_rerun_against_their_own_ledger_change_nothing(
    empty_database_url,
):
    """A legacy ledger is rewritten only for the new files, never for the legacy ones."""
    await apply_migrations(empty_database_url, _legacy())

    assert [] == await apply_migrations(empty_database_url, _legacy())
    assert list(LEGACY_LEDGER) == await _rows(empty_database_url, LEDGER)


async def test_a_partial_legacy_ledger_is_refused_and_left_alone(empty_database_url):
    """Only the whole legacy sequence is known to equal 0001-0007; anything else is refused."""
    await apply_migrations(empty_database_url, _legacy()[:-1])  # without 0300
    before = await _rows(empty_database_url, LEDGER)

    with pytest.raises(MigrationError, match=r"^0002_queue_tables\.sql changed after"):
        await apply_migrations(empty_database_url)

    assert before == await _rows(empty_database_url, LEDGER)


def _after_legacy() -> list[Migration]:
    """The migrations newer than the legacy sequence (0001-0007): a legacy database's pending."""
    return [m for m in load_migrations() if m.version > 7]


def _file(version: int, name: str, sql: str | None = None) -> Migration:
    return Migration(
        version=version, name=name, sql=sql or f"CREATE TABLE public.{name}_table (id int)"
    )


async def _table_exists(url: str, name: str) -> bool:
    [(exists,)] = await _rows(url, "SELECT to_regclass(%s) IS NOT NULL", (f"public.{name}",))
    return bool(exists)


async def test_a_pending_file_older_than_the_newest_applied_is_refused(empty_database_url):
    one, two, three = _file(1, "one"), _file(2, "two"), _file(3, "three")
    await apply_migrations(empty_database_url, [one, three])

    with pytest.raises(MigrationError) as refused:
        await apply_migrations(empty_database_url, [one, two, three])

    assert (
        "0002_two.sql is pending but numbered below 0003_three.sql, which is already applied"
    ) in str(refused.value)
    assert not await _table_exists(empty_database_url, "two_table")
    assert [1, 3] == [row[0] for row in await _rows(empty_database_url, LEDGER)]


async def test_an_applied_file_whose_text_changed_is_refused(empty_database_url):
    await apply_migrations(empty_database_url, [_file(1, "first")])
    edited = _file(1, "first", "CREATE TABLE public.other_table (id int)")

    with pytest.raises(MigrationError) as refused:
        await apply_migrations(empty_database_url, [edited, _file(2, "second")])

    assert str(refused.value).startswith("0001_first.sql changed after it was applied")
    assert not await _table_exists(empty_database_url, "second_table")
    [status, _] = await migration_status(empty_database_url, [edited, _file(2, "second")])
    assert "changed" == status.state


async def test_an_applied_file_renamed_is_refused(empty_database_url):
    first = _file(1, "first")
    await apply_migrations(empty_database_url, [first])
    renamed = Migration(version=1, name="renamed", sql=first.sql)

    with pytest.raises(MigrationError) as refused:
        await apply_migrations(empty_database_url, [renamed])

    assert "0001_first.sql is applied" in str(refused.value)
    assert "0001_renamed.sql" in str(refused.value)


async def test_a_ledger_row_without_a_file_says_the_database_is_newer(empty_database_url):
    one, two = _file(1, "one"), _file(2, "two")
    await apply_migrations(empty_database_url, [one, two])

    with pytest.raises(MigrationError) as refused:
        await apply_migrations(empty_database_url, [one])

    assert str(refused.value).startswith(
        "0002_two.sql is applied to this database but no such file exists here:"
        " the database was migrated by newer code"
    )
    statuses = await migration_status(empty_database_url, [one])
    assert [(1, "applied"), (2, "no_file")] == [(s.version, s.state) for s in statuses]


async def test_the_readiness_function_answers_the_api_and_the_worker_only(database_url):
    """0008 gave it to the API; 0015 to the worker too, for its own /readyz."""
    expected = [(m.version, m.checksum) for m in load_migrations()]
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        for role in ("identity_service", "outbox_worker"):
            await conn.execute(f"SET ROLE {role}")
            cursor = await conn.execute(
                "SELECT version, checksum FROM outbox_meta.applied_migrations()"
            )
            assert expected == await cursor.fetchall()
        await conn.execute("SET ROLE outbox_producer")
        with pytest.raises(errors.InsufficientPrivilege):
            await conn.execute("SELECT * FROM outbox_meta.applied_migrations()")
    [(gone,)] = await _rows(database_url, "SELECT to_regproc('identity.applied_migrations')")
    assert gone is None
