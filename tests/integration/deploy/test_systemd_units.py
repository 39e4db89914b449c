"""deploy/systemd: the units pass ``systemd-analyze verify`` and start real outboxctl commands
with settings the reader accepts and reads.

``systemd-analyze`` comes from Debian's ``systemd`` package (``.ci/run`` installs it); without
it the two tests that run it skip, naming the package.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from outbox.entrypoints.bootstrap.seal_keys import SEAL_KEYS_FILE
from tests.integration.deploy.artifacts import (
    DEPLOY,
    Process,
    outboxctl_command,
    parse_env_file,
    parse_unit,
    unit_values,
    unread_variables,
)
from tests.os_programs import require_program

UNITS = DEPLOY / "systemd"
INSTALLED_OUTBOXCTL = "/opt/outbox/bin/outboxctl"
CONFIG_DIR = "/etc/outbox/"
SERVICES = sorted(UNITS.glob("*.service"))


def _exec_start(path: Path) -> list[str]:
    (line,) = unit_values(parse_unit(path), "Service", "ExecStart")
    return shlex.split(line)


def _process(path: Path, credentials: Path) -> Process:
    """The process a service unit starts, with the environment systemd would give it."""
    unit = parse_unit(path)
    environ: dict[str, str] = {}
    for file in unit_values(unit, "Service", "EnvironmentFile"):
        assert file.startswith(CONFIG_DIR), file
        environ |= parse_env_file(UNITS / file.removeprefix(CONFIG_DIR))
    for assignment in unit_values(unit, "Service", "Environment"):
        name, _, value = assignment.partition("=")
        environ[name] = value.replace("%d", str(credentials))
    return Process(
        name=path.name, command=outboxctl_command(_exec_start(path)[1:]), environ=environ
    )


@pytest.fixture(scope="session")
def systemd_analyze() -> str:
    """Debian's systemd-analyze."""
    return require_program("systemd-analyze", "systemd")


def test_every_unit_passes_systemd_analyze_verify(systemd_analyze: str, tmp_path: Path) -> None:
    """systemd's own checker finds nothing: no unknown key, no bad value, no missing unit.

    It also checks that each ExecStart binary exists, so the copies point it at this
    checkout's outboxctl; test_units_start_the_installed_outboxctl checks the real path.
    """
    outboxctl = str(Path(sys.executable).parent / "outboxctl")
    for unit in sorted(UNITS.glob("*.service")) + sorted(UNITS.glob("*.timer")):
        text = unit.read_text(encoding="utf-8").replace(INSTALLED_OUTBOXCTL, outboxctl)
        (tmp_path / unit.name).write_text(text, encoding="utf-8")
    result = subprocess.run(
        [systemd_analyze, "verify", "--man=no", *sorted(str(p) for p in tmp_path.iterdir())],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (0, "", "") == (result.returncode, result.stdout, result.stderr)


def test_systemd_analyze_verify_catches_a_mistake(systemd_analyze: str, tmp_path: Path) -> None:
    """The check above can fail: a misspelt key is reported."""
    broken = tmp_path / "outbox-broken.service"
    broken.write_text("[Service]\nExecStart=/bin/true\nKillSignl=SIGTERM\n", encoding="utf-8")
    result = subprocess.run(
        [systemd_analyze, "verify", "--man=no", str(broken)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert "Unknown key" in result.stderr


def test_units_start_the_installed_outboxctl_with_real_commands() -> None:
    commands = {path.name: _exec_start(path) for path in SERVICES}
    assert {
        "outbox-api.service": "serve",
        "outbox-admin.service": "serve",
        "outbox-worker.service": "worker",
        "outbox-migrate.service": "db migrate",
        "outbox-sweep-expiry.service": "sweep",
        "outbox-sweep-retention.service": "sweep",
    } == {name: outboxctl_command(argv[1:]) for name, argv in commands.items()}
    assert {INSTALLED_OUTBOXCTL} == {argv[0] for argv in commands.values()}
    assert ["serve", "--only", "public"] == commands["outbox-api.service"][1:]
    assert ["serve", "--only", "admin"] == commands["outbox-admin.service"][1:]
    assert ["sweep", "expiry"] == commands["outbox-sweep-expiry.service"][1:]
    assert ["sweep", "retention"] == commands["outbox-sweep-retention.service"][1:]


def test_each_sweep_has_a_timer_and_each_timer_a_sweep() -> None:
    timers = {path.stem for path in UNITS.glob("*.timer")}
    sweeps = {path.stem for path in SERVICES if path.stem.startswith("outbox-sweep-")}
    assert sweeps == timers


def test_unit_environments_are_valid_production_settings(tmp_path: Path) -> None:
    """Each service starts with settings the reader accepts (production, every channel set)."""
    for path in SERVICES:
        settings = _process(path, tmp_path).settings()
        assert "production" == settings.environment.value, path.name


def test_every_variable_in_the_environment_files_is_read(tmp_path: Path) -> None:
    """A variable no process reads is a typo or a leftover: the example would mislead."""
    processes = [_process(path, tmp_path) for path in SERVICES]
    named = {name for process in processes for name in process.environ}
    assert set() == unread_variables(named, processes)


def test_the_worker_unit_runs_every_lane_with_a_login_for_each_job(tmp_path: Path) -> None:
    process = _process(UNITS / "outbox-worker.service", tmp_path)
    settings = process.settings()
    assert ("security", "events", "consumers") == settings.worker.lanes
    assert "OUTBOX_DATABASE_URL" not in process.environ  # never the API's login
    assert settings.database.worker_url is not None
    assert settings.database.consumers_url is not None


def test_the_worker_stops_within_the_unit_stop_timeout(tmp_path: Path) -> None:
    """systemd must not SIGKILL a worker still finishing its sends within its grace period."""
    path = UNITS / "outbox-worker.service"
    grace = _process(path, tmp_path).settings().worker.shutdown_grace.total_seconds()
    (timeout,) = unit_values(parse_unit(path), "Service", "TimeoutStopSec")
    assert int(timeout) > grace


def test_processes_that_open_envelopes_get_the_keys_as_a_credential(tmp_path: Path) -> None:
    """The seal keys come from systemd's credential directory, never from a variable."""
    for path in SERVICES:
        process = _process(path, tmp_path)
        assert "OUTBOX_SEAL_KEYS" not in process.environ, path.name
        if process.command == "db migrate":
            continue
        unit = parse_unit(path)
        assert ["seal-keys:/etc/outbox/seal-keys"] == unit_values(unit, "Service", "LoadCredential")
        assert str(tmp_path / "seal-keys") == process.environ[SEAL_KEYS_FILE], path.name


@pytest.mark.parametrize("path", SERVICES, ids=lambda p: p.name)
def test_services_run_unprivileged(path: Path) -> None:
    unit = parse_unit(path)
    assert ["outbox"] == unit_values(unit, "Service", "User")
    assert ["yes"] == unit_values(unit, "Service", "NoNewPrivileges")
    assert ["strict"] == unit_values(unit, "Service", "ProtectSystem")
