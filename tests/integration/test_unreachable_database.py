"""An unreachable database is named by its reason, within seconds (issue 29, finding 7).

It took 32 s and said only "OperationalError". Now a command gives up after
``OUTBOX_DB_CONNECT_TIMEOUT_SECONDS`` (5 by default) and says why: nothing listening, a
refused login, a database that does not exist. The libpq text, which quotes the host, the
user and the database, is never shown.
"""

from __future__ import annotations

import time
from pathlib import Path

import psycopg
import pytest

from outbox.entrypoints.cli.exit_codes import ExitCode
from tests.outboxctl import run_outboxctl
from tests.security.served import free_port

pytestmark = pytest.mark.integration


def _unreachable(database_url: str) -> dict[str, str]:
    return {
        "refused": f"postgresql://outbox:s3cret@127.0.0.1:{free_port()}/outbox",
        "authentication": psycopg.conninfo.make_conninfo(database_url, user="no_such_login"),
        "database": psycopg.conninfo.make_conninfo(database_url, dbname="no_such_database"),
    }


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("refused", "connection_refused"),
        ("authentication", "authentication_failed"),
        ("database", "database_not_found"),
    ],
)
def test_a_failed_connection_says_why_in_seconds(
    database_url: str, tmp_path: Path, case: str, reason: str
) -> None:
    url = _unreachable(database_url)[case]
    started = time.monotonic()
    result = run_outboxctl(
        "db", "status", variables={"OUTBOX_DATABASE_URL": url, "OUTBOX_DATA_DIR": str(tmp_path)}
    )
    took = time.monotonic() - started

    assert ExitCode.DATABASE_UNAVAILABLE == result.returncode, result.stderr
    assert f"database unavailable ({reason})" in result.stderr
    assert "s3cret" not in result.stderr
    assert "no_such_login" not in result.stderr
    print(f"{case}: exit {result.returncode} after {took:.1f} s")
