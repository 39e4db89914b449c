"""``outboxctl db migrate`` as the deployment's migrator login, not a superuser, on a second
database of a cluster whose outbox roles another login created (here the superuser that
migrated this test process's template), as docs/sql-api.md#roles describes it.

From PostgreSQL 16 granting a role needs its ADMIN option, which CREATEROLE no longer gives:
the migrations' role grants (0009, 0022, 0027, 0037) are refused until the login has it.
Before 16, CREATEROLE is enough. The test takes the path of the server it runs on; `.ci/run`
runs it on both.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from outbox.adapters.postgres.migrator import load_migrations
from outbox.entrypoints.cli.exit_codes import ExitCode
from tests.integration.production import may_grant_job_roles
from tests.outboxctl import invoke_outboxctl

pytestmark = pytest.mark.integration


@pytest.fixture
def migrator(database_url: str, empty_database_url: str) -> Iterator[str]:
    """The URL of a CREATEROLE login that is a member of outbox_owner and may create schemas
    in the empty database: the migrator the docs describe, on a cluster that has the roles
    (``database_url`` is a first database, migrated by a superuser)."""
    name = f"test_migrator_{uuid.uuid4().hex[:10]}"
    login = sql.Identifier(name)
    database = sql.Identifier(str(psycopg.conninfo.conninfo_to_dict(empty_database_url)["dbname"]))
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        assert conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'outbox_owner'").fetchone()
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN CREATEROLE IN ROLE outbox_owner").format(login))
        conn.execute(sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(database, login))
    yield psycopg.conninfo.make_conninfo(empty_database_url, user=name)
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("REASSIGN OWNED BY {} TO outbox_owner").format(login))  # the ledger
        conn.execute(sql.SQL("DROP OWNED BY {}").format(login))  # its grants
        conn.execute(sql.SQL("DROP ROLE {}").format(login))


def _migrate(url: str) -> tuple[int, str]:
    result = invoke_outboxctl("db", "migrate", "--json", variables={"OUTBOX_DATABASE_URL": url})
    return result.returncode, result.stderr


def _applied(database_url: str) -> int:
    with psycopg.connect(database_url) as conn:
        row = conn.execute("SELECT count(*) FROM outbox_meta.migrations").fetchone()
    assert row is not None
    return int(row[0])


def test_a_second_database_migrates_as_the_migrator_login_given_the_documented_grants(
    empty_database_url: str, migrator: str
) -> None:
    with psycopg.connect(empty_database_url) as conn:
        version = conn.info.server_version
    name = psycopg.conninfo.conninfo_to_dict(migrator)["user"]

    code, stderr = _migrate(migrator)

    if version >= 160000:
        # Refused at the first role grant, naming the file, the role and what to grant; the
        # files before it stay applied, and nothing of 0009 is.
        assert ExitCode.REFUSED == code, stderr
        assert "0009_roles_by_job.sql" in stderr
        assert 'permission denied to grant role \\"outbox_producer\\"' in stderr
        assert "the ADMIN option on each outbox role" in stderr
        assert 8 == _applied(empty_database_url)
        # What docs/sql-api.md says to run once per cluster for another login's roles.
        with psycopg.connect(empty_database_url, autocommit=True) as conn:
            may_grant_job_roles(conn, name)
        code, stderr = _migrate(migrator)

    assert 0 == code, stderr
    assert len(load_migrations()) == _applied(empty_database_url)
    with psycopg.connect(empty_database_url) as conn:
        owner = conn.execute(
            "SELECT nspowner::regrole::text FROM pg_namespace WHERE nspname = 'events'"
        ).fetchone()
    assert ("outbox_owner",) == owner
