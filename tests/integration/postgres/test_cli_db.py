"""``outboxctl db migrate`` and ``outboxctl db status`` against a real server."""

from __future__ import annotations

import json

import psycopg
import pytest
from typer.testing import CliRunner

from entrypoints.cli.app import app
from entrypoints.cli.exit_codes import ExitCode

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
    assert all(item["applied_at"] for item in applied)
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
