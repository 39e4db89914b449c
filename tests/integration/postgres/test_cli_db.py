"""``outboxctl db migrate`` and ``outboxctl db status`` against a real server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import psycopg
import pytest
from typer.testing import CliRunner

from outbox.adapters.postgres.migrator import apply_migrations, load_migrations
from outbox.entrypoints.cli.app import app
from outbox.entrypoints.cli.exit_codes import ExitCode

pytestmark = pytest.mark.integration


def _run(*args: str, url: str | None):
    return CliRunner().invoke(app, ["db", *args], env={"OUTBOX_DATABASE_URL": url})


def test_migrate_creates_everything_and_a_second_run_changes_nothing(empty_database_url):
    first = _run("migrate", url=empty_database_url)
    second = _run("migrate", url=empty_database_url)

    assert ExitCode.OK == first.exit_code, first.output
    assert "applied 0001_roles_and_schemas" in first.stdout
    assert ExitCode.OK == second.exit_code
    assert "up to date\n" == second.stdout


def test_status_json_lists_every_migration_and_its_state(empty_database_url):
    before = _run("status", "--json", url=empty_database_url)
    _run("migrate", url=empty_database_url)
    after = _run("status", "--json", url=empty_database_url)

    assert {"pending"} == {item["state"] for item in json.loads(before.stdout)}
    applied = json.loads(after.stdout)
    assert {"applied"} == {item["state"] for item in applied}
    assert all(item["appliedAt"] for item in applied)
    assert [1, 2, 3] == [item["version"] for item in applied][:3]


def test_status_prints_a_table_by_default(database_url):
    result = _run("status", url=database_url)

    assert ExitCode.OK == result.exit_code
    assert "roles_and_schemas" in result.stdout
    assert "applied" in result.stdout


def test_migrate_refuses_a_database_newer_than_the_code_and_status_shows_it(database_url):
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO outbox_meta.migrations (version, name, checksum)"
            " VALUES (9999, 'from_newer_code', 'unknown')"
        )

    refused = _run("migrate", url=database_url)
    status = _run("status", "--json", url=database_url)

    assert ExitCode.FAILURE == refused.exit_code
    assert "9999_from_newer_code.sql is applied to this database but no such file" in (
        refused.stderr
    )
    assert ExitCode.OK == status.exit_code
    assert {"version": 9999, "name": "from_newer_code", "state": "no_file"} == {
        key: value
        for key, value in json.loads(status.stdout)[-1].items()
        if key in {"version", "name", "state"}
    }


def test_an_unreachable_database_exits_with_the_database_code():
    result = _run("status", url="postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")

    assert ExitCode.DATABASE_UNAVAILABLE == result.exit_code
    assert "database unavailable" in result.stderr


def test_an_invalid_setting_exits_with_the_configuration_code(database_url):
    result = CliRunner().invoke(
        app,
        ["db", "status"],
        env={"OUTBOX_DATABASE_URL": database_url, "OUTBOX_DB_POOL_MAX": "zero"},
    )

    assert ExitCode.CONFIGURATION == result.exit_code
    assert "OUTBOX_DB_POOL_MAX" in result.stderr


LEGACY_DIR = Path(__file__).with_name("legacy_migrations")


def _ledger(url: str) -> list[tuple[int, str]]:
    with psycopg.connect(url, autocommit=True) as conn:
        exists = conn.execute("SELECT to_regclass('outbox_meta.migrations') IS NOT NULL")
        if not exists.fetchone()[0]:  # type: ignore[index]
            return []
        return conn.execute(
            "SELECT version, name FROM outbox_meta.migrations ORDER BY version"
        ).fetchall()


def test_a_dry_run_lists_what_migrate_would_apply_and_changes_nothing(empty_database_url):
    text = _run("migrate", "--dry-run", url=empty_database_url)
    as_json = _run("migrate", "--dry-run", "--json", url=empty_database_url)

    files = load_migrations()
    assert ExitCode.OK == text.exit_code, text.output
    assert [f"would apply {m.version:04d}_{m.name}" for m in files] == text.stdout.splitlines()
    assert {
        "dryRun": True,
        "rewritesLegacyLedger": False,
        "pending": [{"version": m.version, "name": m.name, "checksum": m.checksum} for m in files],
    } == json.loads(as_json.stdout)
    assert [] == _ledger(empty_database_url)
    _run("migrate", url=empty_database_url)
    assert "up to date\n" == _run("migrate", "--dry-run", url=empty_database_url).stdout


def test_db_sql_prints_the_sql_migrate_would_apply_file_by_file(empty_database_url):
    _run("migrate", url=empty_database_url)
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        [last] = conn.execute(
            "DELETE FROM outbox_meta.migrations WHERE version = ("
            " SELECT max(version) FROM outbox_meta.migrations) RETURNING version"
        ).fetchall()
    newest = load_migrations()[-1]

    printed = _run("sql", url=empty_database_url)

    assert ExitCode.OK == printed.exit_code, printed.output
    assert newest.version == last[0]
    assert printed.stdout.startswith(
        f"-- {newest.version:04d}_{newest.name}.sql (sha256 {newest.checksum})\nBEGIN;\n"
    )
    assert newest.sql.rstrip("\n") in printed.stdout
    assert printed.stdout.rstrip().endswith("COMMIT;")
    assert 1 == printed.stdout.count("BEGIN;")
    assert len(load_migrations()) - 1 == len(_ledger(empty_database_url))  # nothing applied


def test_db_sql_prints_nothing_for_an_up_to_date_database(database_url):
    printed = _run("sql", url=database_url)

    assert (ExitCode.OK, "") == (printed.exit_code, printed.stdout)
    assert "up to date" in printed.stderr


def test_migrate_in_json_mode_reports_on_stdout_and_draws_no_progress(empty_database_url):
    result = _run("migrate", "--json", url=empty_database_url)

    assert (ExitCode.OK, "") == (result.exit_code, result.stderr)
    report = json.loads(result.stdout)
    assert (False, False) == (report["dryRun"], report["rewroteLegacyLedger"])
    assert [m.version for m in load_migrations()] == [m["version"] for m in report["applied"]]


def test_migrate_draws_progress_on_stderr_and_lists_what_it_applied(empty_database_url):
    result = _run("migrate", url=empty_database_url)

    assert ExitCode.OK == result.exit_code, result.output
    last = load_migrations()[-1]
    assert f"applied {last.version:04d}_{last.name}\n" in result.stdout
    assert "migrated" in result.stderr
    assert f"{len(load_migrations())}/{len(load_migrations())}" in result.stderr


def test_migrate_says_when_it_rewrote_a_legacy_ledger(empty_database_url):
    asyncio.run(apply_migrations(empty_database_url, load_migrations(LEGACY_DIR)))

    planned = _run("migrate", "--dry-run", url=empty_database_url)
    result = _run("migrate", url=empty_database_url)
    again = _run("migrate", "--json", url=empty_database_url)

    assert planned.stdout.startswith("would rewrite the ledger of the per-context files")
    assert ExitCode.OK == result.exit_code, result.output
    assert result.stdout.startswith(
        "rewrote the ledger of the per-context files (0100-0300) to the one sequence 0001-0007"
    )
    assert not json.loads(again.stdout)["rewroteLegacyLedger"]
