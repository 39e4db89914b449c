"""What operator commands say about a database they cannot use, run as real processes.

An unmigrated database names the fix (``outboxctl db migrate``); a pooler that loses
prepared statements names the setting; neither prints a traceback.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import httpx
import psycopg
import pytest
from psycopg import errors as pg_errors
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.error_translation import translated_errors
from outbox.adapters.postgres.pool import open_pool
from outbox.adapters.postgres.readiness import PostgresReadinessProbe
from outbox.application.errors import PreparedStatementsUnsupported
from outbox.entrypoints.cli.exit_codes import ExitCode
from tests.integration.providers.network import free_port
from tests.outboxctl import OUTBOXCTL, invoke_outboxctl, outboxctl_environment, run_outboxctl

pytestmark = pytest.mark.integration


def _run(
    url: str, tmp_path: Path, *command: str, installed: bool = False, **extra: str
) -> subprocess.CompletedProcess[str]:
    """``outboxctl COMMAND`` in-process, or through the installed executable."""
    variables = {
        "OUTBOX_DATABASE_URL": url,
        "OUTBOX_DATA_DIR": str(tmp_path),
        "OUTBOX_LOG_FORMAT": "json",
        **extra,
    }
    run = run_outboxctl if installed else invoke_outboxctl
    return run(*command, variables=variables)


@pytest.mark.parametrize(
    "command",
    [
        ("backlog",),
        ("dead-letters", "list"),
        ("messages", "show", "0190b3a0-0000-7000-8000-000000000000"),
        ("worker", "--drain"),
        ("sweep", "expiry"),
    ],
)
def test_an_unmigrated_database_tells_the_operator_to_migrate(
    empty_database_url: str, tmp_path: Path, command: tuple[str, ...]
) -> None:
    result = _run(empty_database_url, tmp_path, *command, installed=command == ("backlog",))

    assert ExitCode.DATABASE_UNAVAILABLE == result.returncode, result.stderr
    assert "run `outboxctl db migrate`" in result.stderr
    assert "Traceback" not in result.stderr
    assert "╭" not in result.stderr


def test_a_start_in_staging_without_link_bases_warns_once_per_variable(
    database_url: str, tmp_path: Path
) -> None:
    """Issue 13 finding 11 (OB12): invitations and magic links would wait, silently."""
    result = _run(database_url, tmp_path, "db", "status", "--json", OUTBOX_ENV="staging")

    assert ExitCode.OK == result.returncode, result.stderr
    warned = [
        json.loads(line)
        for line in result.stderr.splitlines()
        if json.loads(line)["event"] == "settings.warning"
    ]
    assert ["OUTBOX_INVITATION_LINK_BASE_URL", "OUTBOX_MAGIC_LINK_BASE_URL"] == [
        w["detail"].split()[0] for w in warned
    ]
    assert {"warning"} == {w["level"] for w in warned}


def test_a_configured_link_base_is_not_warned_about(database_url: str, tmp_path: Path) -> None:
    result = _run(
        database_url,
        tmp_path,
        "db",
        "status",
        "--json",
        OUTBOX_ENV="staging",
        OUTBOX_INVITATION_LINK_BASE_URL="https://app.example/join",
        OUTBOX_MAGIC_LINK_BASE_URL="https://app.example/sign-in",
    )

    assert ExitCode.OK == result.returncode, result.stderr
    assert "settings.warning" not in result.stderr


async def test_a_lost_prepared_statement_is_reported_as_the_pooler_setting(
    database_url: str,
) -> None:
    """What PgBouncer < 1.21 in transaction mode does: the next server connection does not
    know the statement psycopg prepared. Here the statement is dropped behind psycopg's
    back (``DEALLOCATE`` by name, which psycopg does not track), giving the same error."""
    pool = await open_pool(database_url, min_size=1, max_size=1)
    try:
        async with pool.connection() as conn:
            await conn.execute("SELECT 1 WHERE %s::int = 1", (1,))  # prepared on first use
            names = await (await conn.execute("SELECT name FROM pg_prepared_statements")).fetchall()
            for (name,) in names:
                await conn.execute(
                    psycopg.sql.SQL("DEALLOCATE {}").format(psycopg.sql.Identifier(name)),
                    prepare=False,
                )
            with pytest.raises(PreparedStatementsUnsupported) as caught, translated_errors():
                await conn.execute("SELECT 1 WHERE %s::int = 1", (1,))
    finally:
        await pool.close()

    assert isinstance(caught.value.__cause__, pg_errors.InvalidSqlStatementName)
    assert "OUTBOX_DB_PREPARED_STATEMENTS=false" in caught.value.hint


def test_serve_against_an_unmigrated_database_says_to_migrate_and_readyz_says_why(
    empty_database_url: str, tmp_path: Path
) -> None:
    port = free_port()
    environment = {
        **outboxctl_environment({}),
        "OUTBOX_DATABASE_URL": empty_database_url,
        "OUTBOX_DATA_DIR": str(tmp_path),
        "OUTBOX_LOG_FORMAT": "json",
        "OUTBOX_HTTP_PORT": str(port),
        "OUTBOX_ADMIN_PORT": "0",
        "OUTBOX_WEBHOOK_PORT": "0",
    }
    process = subprocess.Popen(
        [OUTBOXCTL, "serve"],
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        answer = _first_answer(f"http://127.0.0.1:{port}/readyz")
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)

    assert 503 == answer.status_code
    assert {"status": "migrations_pending", "hint": "run `outboxctl db migrate`"}.items() <= (
        answer.json().items()
    )
    [failed, *_] = [json.loads(line) for line in stderr.splitlines() if "readiness.failed" in line]
    assert {"check": "migrations_pending", "hint": "run `outboxctl db migrate`"}.items() <= (
        failed.items()
    )


def _first_answer(url: str) -> httpx.Response:
    deadline = time.monotonic() + 30
    while True:
        try:
            return httpx.get(url)
        except httpx.TransportError:
            assert time.monotonic() < deadline, f"nothing answered at {url}"
            time.sleep(0.1)


async def test_readiness_names_a_role_the_login_cannot_act_as(database_url: str) -> None:
    """SET ROLE to a missing role makes every pool connection fail: the pool only times out,
    and the probe's direct connection says why."""

    async def configure(conn: psycopg.AsyncConnection) -> None:
        await conn.execute("SET ROLE no_such_role")

    pool: AsyncConnectionPool[psycopg.AsyncConnection] = AsyncConnectionPool(
        database_url, min_size=1, configure=configure, open=False
    )
    await pool.open(wait=False)
    try:
        report = await PostgresReadinessProbe(pool, role="no_such_role", timeout=1).check()
    finally:
        await pool.close()

    assert ("role_missing", "no_such_role") == (report.failed, report.missing_role)
    assert "grant no_such_role" in report.hint


async def test_readiness_counts_every_migration_pending_on_an_empty_database(
    empty_database_url: str,
) -> None:
    pool = await open_pool(empty_database_url)
    try:
        report = await PostgresReadinessProbe(pool).check()
    finally:
        await pool.close()

    assert "migrations_pending" == report.failed
    assert "0001_roles_and_schemas" == report.pending_migrations[0]


async def test_readiness_says_unreachable_with_the_error_code(database_url: str) -> None:
    missing = database_url + " dbname=no_such_database"
    pool: AsyncConnectionPool[psycopg.AsyncConnection] = AsyncConnectionPool(
        missing, min_size=1, open=False
    )
    await pool.open(wait=False)
    try:
        report = await PostgresReadinessProbe(pool, timeout=1).check()
    finally:
        await pool.close()

    assert ("database_unreachable", "database_not_found") == (report.failed, report.error_code)
