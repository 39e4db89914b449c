"""A process checks its database role before it serves (OX-W9; issue 13 finding 11).

In staging and production the API and the worker refuse a superuser, a role that bypasses row
security, and a role that may do another job's work, naming the fix; development starts with
a warning. A role without its own job's functions is refused everywhere.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import psycopg
import pytest
from psycopg import sql
from structlog.testing import capture_logs

from outbox.adapters.crypto.base64url import encode
from outbox.entrypoints.bootstrap.database import DatabaseAccess, database_pool
from outbox.entrypoints.bootstrap.database_roles import DatabaseRoleRefused
from outbox.entrypoints.cli.exit_codes import ExitCode
from outbox.entrypoints.settings.tree import Settings, load_settings
from tests.outboxctl import run_outboxctl

pytestmark = pytest.mark.integration

Login = Callable[..., str]


@pytest.fixture
def login(database_url: str) -> Iterator[Login]:
    """``login("identity_service", bypassrls=True)``: a throw-away login role's URL."""
    made: list[str] = []

    def make(*groups: str, bypassrls: bool = False) -> str:
        name = f"test_login_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN {}").format(
                    sql.Identifier(name), sql.SQL("BYPASSRLS" if bypassrls else "")
                )
            )
            for group in groups:
                conn.execute(
                    sql.SQL("GRANT {} TO {}").format(sql.Identifier(group), sql.Identifier(name))
                )
        made.append(name)
        return psycopg.conninfo.make_conninfo(database_url, user=name)

    yield make
    with psycopg.connect(database_url, autocommit=True) as conn:
        for name in made:
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


def _settings(url: str, environment: str = "staging", **extra: str) -> Settings:
    return load_settings({"OUTBOX_ENV": environment, "OUTBOX_DATABASE_URL": url, **extra})


async def _problems(settings: Settings, access: DatabaseAccess) -> tuple[str, ...]:
    """The refusals, or () when the pool opened."""
    try:
        async with database_pool(settings, access):
            return ()
    except DatabaseRoleRefused as refused:
        return refused.problems


@pytest.mark.parametrize("access", [DatabaseAccess.API, DatabaseAccess.WORKER])
async def test_a_superuser_is_refused_outside_development_naming_the_fix(database_url, access):
    job = "identity_service" if access is DatabaseAccess.API else "outbox_worker"

    [problem] = await _problems(_settings(database_url), access)

    assert "is a superuser" in problem
    assert f"IN ROLE {job}" in problem


async def test_a_superuser_acting_as_the_job_role_is_still_refused(database_url):
    """SET ROLE does not help: the login itself could RESET ROLE."""
    settings = _settings(database_url, OUTBOX_API_DB_ROLE="identity_service")

    [problem] = await _problems(settings, DatabaseAccess.API)

    assert "(acting as identity_service) is a superuser" in problem


@pytest.mark.parametrize(
    ("access", "groups"),
    [
        (DatabaseAccess.API, ("identity_service",)),
        (DatabaseAccess.WORKER, ("outbox_worker",)),
        (DatabaseAccess.ADMIN, ("staff_service",)),
    ],
)
async def test_a_login_granted_its_job_only_starts_without_a_word(login, access, groups):
    with capture_logs() as logs:
        assert () == await _problems(_settings(login(*groups), "production"), access)

    assert [] == [entry for entry in logs if entry["event"] == "database.role_warning"]


async def test_an_api_login_that_may_also_dispatch_is_refused(login):
    url = login("identity_service", "outbox_worker")

    [problem] = await _problems(_settings(url), DatabaseAccess.API)

    assert "is a member of outbox_worker" in problem
    assert "REVOKE outbox_worker FROM test_login_" in problem


async def test_a_public_api_login_that_may_start_staff_sessions_is_refused(login):
    """Issue 28, finding 1: the public listener's login must not hold the admin's role."""
    url = login("identity_service", "staff_service")

    [problem] = await _problems(_settings(url), DatabaseAccess.API)

    assert "is a member of staff_service" in problem
    assert "REVOKE staff_service FROM test_login_" in problem


async def test_an_admin_login_without_the_staff_role_is_told_what_to_grant(login):
    url = login("identity_service")
    settings = _settings(url, "development", OUTBOX_ADMIN_DATABASE_URL=url)

    [problem] = await _problems(settings, DatabaseAccess.ADMIN)

    assert "the admin listener's database role" in problem
    assert "GRANT staff_service TO test_login_" in problem


async def test_a_worker_login_that_may_also_produce_is_refused(login):
    url = login("outbox_worker", "outbox_producer")
    settings = _settings(url, OUTBOX_WORKER_DATABASE_URL=url)

    [problem] = await _problems(settings, DatabaseAccess.WORKER)

    assert "is a member of outbox_producer" in problem


@pytest.mark.parametrize("extra", ["notifications_producer", "events_consumer", "inbox_consumer"])
async def test_a_worker_login_holding_any_other_job_role_is_refused(login, extra):
    """The finding (issue 28): the check looked only at the outbox, identity and outbox_meta
    schemas, so a worker login that could also record notification intents, run consumers
    or write an inbox passed strict mode."""
    url = login("outbox_worker", extra)
    settings = _settings(url, OUTBOX_WORKER_DATABASE_URL=url)

    [problem] = await _problems(settings, DatabaseAccess.WORKER)

    assert f"is a member of {extra}" in problem


async def test_a_login_that_may_act_as_the_owner_is_refused(login):
    [problem] = await _problems(
        _settings(login("identity_service", "outbox_owner")), DatabaseAccess.API
    )

    assert "is a member of outbox_owner" in problem


async def test_a_login_that_bypasses_row_security_is_refused(login):
    [problem] = await _problems(
        _settings(login("identity_service", bypassrls=True)), DatabaseAccess.API
    )

    assert "bypasses row security (BYPASSRLS); ALTER ROLE test_login_" in problem


@pytest.mark.parametrize("environment", ["development", "production"])
async def test_an_api_login_still_granted_the_old_runtime_role_is_told_what_to_grant(
    login, environment
):
    """An upgraded deployment: outbox_runtime no longer carries the API's functions, so the
    API would answer 42501 to every request; it says so at once instead, everywhere."""
    url = login("outbox_runtime")

    [problem] = await _problems(_settings(url, environment), DatabaseAccess.API)

    assert "lacks identity_service's functions" in problem
    assert "GRANT identity_service TO test_login_" in problem
    assert "outbox_runtime no longer carries them" in problem


async def test_development_starts_as_a_superuser_with_a_warning(database_url):
    """The embedded server is reached as its superuser; development allows it, and says so."""
    with capture_logs() as logs:
        assert () == await _problems(_settings(database_url, "development"), DatabaseAccess.API)

    [warning] = [entry for entry in logs if entry["event"] == "database.role_warning"]
    assert "warning" == warning["log_level"]
    assert "is a superuser" in warning["detail"]
    assert "refused outside development" in warning["detail"]


def test_serve_in_production_as_a_superuser_exits_3_naming_the_fix(database_url, tmp_path):
    variables = {
        "OUTBOX_ENV": "production",
        "OUTBOX_DATABASE_URL": database_url,
        "OUTBOX_DATA_DIR": str(tmp_path),
        "OUTBOX_HTTP_PORT": "0",
        "OUTBOX_WEBHOOK_PORT": "0",
        "OUTBOX_SEAL_KEYS": f"test:{encode(bytes(range(32)))}",
    }

    result = run_outboxctl("serve", variables=variables)

    assert ExitCode.CONFIGURATION == result.returncode, result.stderr
    assert "refused to start" in result.stderr
    assert "is a superuser" in result.stderr
    assert "IN ROLE identity_service" in result.stderr
    assert "Traceback" not in result.stderr
