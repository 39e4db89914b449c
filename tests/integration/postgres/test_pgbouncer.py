"""A real PgBouncer 1.18 (before 1.21) in transaction mode, in front of the test database.

PgBouncer before 1.21 does not track prepared statements: a server connection keeps the
statements one client prepared and hands them to the next, so psycopg's ``_pg3_0`` already
exists (42P05) or is missing (26000). ``outboxctl`` names the setting to change instead of a
traceback, and with ``OUTBOX_DB_PREPARED_STATEMENTS=false`` the same commands work.
Debian's ``pgbouncer`` package gives the program (``.ci/run`` installs it); without it these
tests skip, naming the package.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from psycopg.conninfo import conninfo_to_dict

from outbox.entrypoints.cli.exit_codes import ExitCode
from tests.integration.providers.network import free_port
from tests.os_programs import require_program
from tests.outboxctl import invoke_outboxctl, run_outboxctl

pytestmark = pytest.mark.integration

PASSWORD = "pooler-secret-7f3a"
COMMANDS = [("backlog",), ("dead-letters", "list"), ("worker", "--drain"), ("sweep", "expiry")]


@pytest.fixture(scope="session")
def pgbouncer_binary() -> str:
    """Debian's pgbouncer (in /usr/sbin), looked for before any test database is made."""
    return require_program("pgbouncer", "pgbouncer")


def _wait_for_port(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"pgbouncer exited {process.returncode}: {log.read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        except OSError:
            time.sleep(0.1)
        else:
            return
    pytest.fail(f"pgbouncer did not listen on {port}: {log.read_text()}")


@pytest.fixture
def pgbouncer_url(pgbouncer_binary: str, database_url: str) -> Iterator[str]:
    """``database_url`` through a private PgBouncer (transaction pooling, one server link)."""
    target = conninfo_to_dict(database_url)
    database, user = str(target["dbname"]), str(target.get("user", "root"))
    host, server_port = target.get("host", "127.0.0.1"), target.get("port", 5432)
    # Outside pytest's private (0700) temporary root: PgBouncer refuses to run as root. It
    # runs as ``nobody``, or, when the server is the embedded one on a Unix socket, as the
    # owner of the socket's directory (the only user that may reach it); either must read
    # the ini and the auth file here (it writes nothing).
    unix_socket = str(host).startswith("/")
    run_as = Path(str(host)).owner() if unix_socket else "nobody"
    directory = Path(tempfile.mkdtemp(prefix="outbox-pgbouncer-"))
    directory.chmod(0o755)
    port = free_port()
    (directory / "users.txt").write_text(f'"{user}" ""\n')
    ini = directory / "pgbouncer.ini"
    ini.write_text(
        "[databases]\n"
        f"{database} = host={host} port={server_port} dbname={database}\n"
        "[pgbouncer]\n"
        "listen_addr = 127.0.0.1\n"
        f"listen_port = {port}\n"
        'unix_socket_dir = ""\n'
        "auth_type = trust\n"
        f"auth_file = {directory / 'users.txt'}\n"
        "pool_mode = transaction\n"
        "default_pool_size = 1\n"
        "max_client_conn = 50\n"
    )
    for path in directory.iterdir():
        path.chmod(0o644)
    log = directory / "pgbouncer.err"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [pgbouncer_binary, "-u", run_as, str(ini)]
            if os.geteuid() == 0
            else [pgbouncer_binary, str(ini)],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        _wait_for_port(port, process, log)
        # PgBouncer trusts the login, so the password is never asked for, only carried.
        yield f"postgresql://{user}:{PASSWORD}@127.0.0.1:{port}/{database}"
    finally:
        process.terminate()
        process.wait(timeout=20)
        shutil.rmtree(directory, ignore_errors=True)


def _run(
    url: str, data_dir: Path, *command: str, installed: bool = False, **extra: str
) -> subprocess.CompletedProcess[str]:
    """``outboxctl COMMAND`` through the pooler: in-process (each run opens and closes its own
    connections, as a process does), or the installed executable."""
    variables = {"OUTBOX_DATABASE_URL": url, "OUTBOX_DATA_DIR": str(data_dir), **extra}
    run = run_outboxctl if installed else invoke_outboxctl
    return run(*command, variables=variables)


@pytest.mark.parametrize("command", COMMANDS)
def test_pgbouncer_before_1_21_is_reported_as_the_prepared_statements_setting(
    pgbouncer_url: str, tmp_path: Path, command: tuple[str, ...]
) -> None:
    """The first run prepares ``_pg3_0`` on the one server connection; the next collides (the
    first case through the installed executable, as an operator would see it)."""
    first = _run(pgbouncer_url, tmp_path, "backlog")
    second = _run(pgbouncer_url, tmp_path, *command, installed=command == COMMANDS[0])

    assert ExitCode.OK == first.returncode, first.stderr
    assert ExitCode.CONFIGURATION == second.returncode, second.stderr
    assert "prepared statement lost (42P05)" in second.stderr
    assert "OUTBOX_DB_PREPARED_STATEMENTS=false" in second.stderr
    assert "Traceback" not in second.stderr
    assert "╭" not in second.stderr
    assert PASSWORD not in second.stderr + second.stdout


def test_without_prepared_statements_the_same_commands_work_through_pgbouncer(
    pgbouncer_url: str, tmp_path: Path
) -> None:
    for number, command in enumerate(COMMANDS * 2):
        result = _run(
            pgbouncer_url,
            tmp_path,
            *command,
            installed=number == 0,
            OUTBOX_DB_PREPARED_STATEMENTS="false",
        )

        assert ExitCode.OK == result.returncode, (command, result.stderr)
