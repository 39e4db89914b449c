"""Production never runs on a stray local database (issue 29, finding 2; issue 28).

With ``OUTBOX_ENV=production`` and no database URL, ``db migrate --dry-run``, ``db status``
and ``staff grant`` ran against a freshly started embedded cluster and exited 0. Now each
exits 3 naming the variable it reads, and no cluster is created.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from outbox.entrypoints.cli.exit_codes import ExitCode
from tests.outboxctl import run_outboxctl

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    "command",
    [("db", "migrate", "--dry-run"), ("db", "status"), ("staff", "grant", "a@example.com")],
    ids=["db-migrate", "db-status", "staff-grant"],
)
def test_a_command_outside_development_without_a_url_exits_3_naming_it(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    result = run_outboxctl(
        *command,
        variables={"OUTBOX_ENV": "production", "OUTBOX_DATA_DIR": str(tmp_path)},
    )

    assert ExitCode.CONFIGURATION == result.returncode, result.stdout + result.stderr
    assert "OUTBOX_DATABASE_URL" in result.stderr
    assert not (tmp_path / "postgres").exists()
