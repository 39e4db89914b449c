"""Bad configuration: exit 3, every variable named, nothing else.

Each case runs ``outboxctl`` in this process (Typer's CliRunner, the outer ``OUTBOX_*``
variables removed), which reads the settings and prints the lines the installed command
does; one case per kind of failure also runs the installed command as a subprocess and must
see exactly the same. What is asserted is what an operator sees: the exit code, the
variable's name on stderr, no traceback (plain or rich), and no secret quoted back.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs
import pytest
from typer.testing import CliRunner

from outbox.entrypoints.bootstrap import worker_process
from outbox.entrypoints.cli.app import app
from outbox.entrypoints.settings.tree import Settings
from tests.outboxctl import run_outboxctl

PASSWORD = "hunter2-s3cret"
# Never reached: the settings are refused before any connection is made.
UNREACHABLE = f"postgresql://outbox:{PASSWORD}@127.0.0.1:9/outbox"
DEFAULT_COMMAND = ("worker", "--drain")


@attrs.frozen
class Outcome:
    """What a finished ``outboxctl`` left: its exit code, standard output and standard error."""

    code: int
    stdout: str
    stderr: str


def _variables(tmp_path: Path, variables: dict[str, str]) -> dict[str, str]:
    return {
        "OUTBOX_DATA_DIR": str(tmp_path),
        "OUTBOX_DATABASE_URL": UNREACHABLE,
        "OUTBOX_LOG_FORMAT": "json",
        **variables,
    }


def _run(tmp_path: Path, *command: str, **variables: str) -> Outcome:
    """``outboxctl`` in this process, seeing no ``OUTBOX_*`` variable but ``variables``."""
    outer: dict[str, str | None] = {name: None for name in os.environ if name.startswith("OUTBOX_")}
    result = CliRunner().invoke(
        app, list(command or DEFAULT_COMMAND), env=outer | _variables(tmp_path, variables)
    )
    # Any other exception would be a traceback, or the crash line, in a real run.
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    return Outcome(code=result.exit_code, stdout=result.stdout, stderr=result.stderr)


def _run_installed(tmp_path: Path, *command: str, **variables: str) -> Outcome:
    """The installed ``outboxctl`` as a subprocess, with the same variables as ``_run``."""
    completed = run_outboxctl(
        *(command or DEFAULT_COMMAND), variables=_variables(tmp_path, variables)
    )
    return Outcome(code=completed.returncode, stdout=completed.stdout, stderr=completed.stderr)


def _assert_refused(result: Outcome, *variables: str) -> None:
    output = result.stdout + result.stderr
    assert 3 == result.code, output
    for variable in variables:
        assert variable in result.stderr
    assert "Traceback" not in output
    assert "╭" not in output  # rich's traceback box
    assert PASSWORD not in output


@pytest.mark.parametrize(
    ("command", "variables", "named"),
    [
        # A bad variable, refused by the settings: here a secret one, shown masked.
        (
            ("backlog",),
            {"OUTBOX_DATABASE_URL": f"postgresql://outbox:{PASSWORD}@db internal/outbox"},
            "OUTBOX_DATABASE_URL",
        ),
        # A bad option, refused by the command before it reads the settings.
        (("worker", "--drain", "--lanes", "bogus"), {}, "--lanes"),
    ],
    ids=["variable", "option"],
)
def test_the_installed_outboxctl_says_exactly_what_the_in_process_runs_say(
    tmp_path: Path, command: tuple[str, ...], variables: dict[str, str], named: str
) -> None:
    """The proof that the in-process cases below show what an operator sees."""
    installed = _run_installed(tmp_path, *command, **variables)

    _assert_refused(installed, named)
    assert _run(tmp_path, *command, **variables) == installed


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("OUTBOX_LOG_LEVEL", "bogus"),
        ("OUTBOX_HTTP_PORT", "99999"),
        ("OUTBOX_WORKER_METRICS_PORT", "-1"),
        ("OUTBOX_WORKER_POLL_SECONDS", "inf"),
        ("OUTBOX_WORKER_LEASE_SECONDS", "nan"),
        ("OUTBOX_SESSION_LIFETIME_SECONDS", "1e300"),
        ("OUTBOX_RETENTION_PUBLISHED_DAYS", "99999999999"),
        ("OUTBOX_TEMPLATE_DIR", "/nonexistent/templates"),
        ("OUTBOX_LOG_FORMAT", "xml"),
        ("OUTBOX_ENV", "prod"),
    ],
)
def test_a_bad_value_exits_3_naming_the_variable(tmp_path: Path, variable: str, value: str) -> None:
    _assert_refused(_run(tmp_path, **{variable: value}), variable)


def test_a_pool_whose_minimum_exceeds_its_maximum_is_refused(tmp_path: Path) -> None:
    result = _run(tmp_path, OUTBOX_DB_POOL_MIN="5", OUTBOX_DB_POOL_MAX="2")

    _assert_refused(result, "OUTBOX_DB_POOL_MIN", "OUTBOX_DB_POOL_MAX")


@pytest.mark.parametrize(
    "url",
    [
        f"postgres//outbox:{PASSWORD}@db.internal/outbox",  # no scheme separator
        f"postgresql://outbox:{PASSWORD}@db.internal:notaport/outbox",
        f"postgresql://outbox:{PASSWORD}@db internal/outbox",
        f"host=db.internal password={PASSWORD} port=99999",
    ],
)
def test_a_malformed_database_url_is_named_with_its_password_masked(
    tmp_path: Path, url: str
) -> None:
    result = _run(tmp_path, "backlog", OUTBOX_DATABASE_URL=url)

    _assert_refused(result, "OUTBOX_DATABASE_URL")
    assert "***" in result.stderr or "port" in result.stderr


def test_an_expiry_sweep_slower_than_the_code_lifetime_is_refused(tmp_path: Path) -> None:
    """Issue 13 finding 11: codes would wait in the queue past their lifetime, then be sent."""
    result = _run(
        tmp_path, OUTBOX_CHALLENGE_LIFETIME_SECONDS="300", OUTBOX_SWEEP_EXPIRY_SECONDS="900"
    )

    _assert_refused(result, "OUTBOX_SWEEP_EXPIRY_SECONDS")
    assert "OUTBOX_CHALLENGE_LIFETIME_SECONDS" in result.stderr


def test_every_bad_variable_is_reported_in_one_run(tmp_path: Path) -> None:
    result = _run(
        tmp_path,
        OUTBOX_ENV="production",
        OUTBOX_LOG_LEVEL="loud",
        OUTBOX_HTTP_PORT="70000",
        OUTBOX_WORKER_POLL_SECONDS="nan",
        OUTBOX_CHANNEL_EMAIL="smtp",
        OUTBOX_SMTP_PASSWORD=PASSWORD,
        OUTBOX_CODE_DIGITS="4",
    )

    _assert_refused(
        result,
        "OUTBOX_LOG_LEVEL",
        "OUTBOX_HTTP_PORT",
        "OUTBOX_WORKER_POLL_SECONDS",
        "OUTBOX_CHANNEL_SMS",
        "OUTBOX_CHANNEL_WHATSAPP",
        "OUTBOX_SMTP_USERNAME",
        "OUTBOX_SMTP_HOST",
        "OUTBOX_CODE_DIGITS",
    )


def test_a_secret_variable_is_never_quoted_back(tmp_path: Path) -> None:
    result = _run(
        tmp_path,
        OUTBOX_ENV="production",
        OUTBOX_CHANNEL_EMAIL="brevo",
        OUTBOX_CHANNEL_SMS="none",
        OUTBOX_CHANNEL_WHATSAPP="none",
        OUTBOX_BREVO_API_KEY=PASSWORD,
        OUTBOX_BREVO_BASE_URL=f"ftp://{PASSWORD}",
    )

    _assert_refused(result, "OUTBOX_BREVO_BASE_URL", "OUTBOX_BREVO_SENDER_EMAIL")


def test_an_unknown_lane_exits_3_naming_the_variable(tmp_path: Path) -> None:
    result = _run(tmp_path, OUTBOX_WORKER_LANES="security,bogus")

    _assert_refused(result, "OUTBOX_WORKER_LANES")
    assert "unknown lane 'bogus'" in result.stderr


def test_an_unknown_lane_on_the_command_line_exits_3_naming_the_option(tmp_path: Path) -> None:
    result = _run(tmp_path, "worker", "--drain", "--lanes", "bogus")

    _assert_refused(result, "--lanes")
    assert "unknown lane 'bogus'" in result.stderr


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[Settings]:
    """The settings each ``outboxctl worker`` started its lanes with, once they were read.

    The worker itself is left out: with no database it would retry its pool for 30 s, and
    what these tests prove is over by then (the settings were accepted or refused).
    """
    handed: list[Settings] = []

    async def run_worker(settings: Settings, **_options: object) -> dict[str, Any]:
        handed.append(settings)
        return {}

    monkeypatch.setattr(worker_process, "run_worker", run_worker)
    return handed


def test_a_worker_of_tenant_events_alone_needs_no_provider_settings(
    tmp_path: Path, started: list[Settings]
) -> None:
    """Only the security lane sends: its provider variables are asked of it alone."""
    sending = _run(tmp_path, "worker", "--drain", "--lanes", "security", OUTBOX_ENV="production")
    assert [] == started  # refused before any lane started
    publishing = _run(tmp_path, "worker", "--drain", "--lanes", "events", OUTBOX_ENV="production")

    _assert_refused(sending, "OUTBOX_CHANNEL_EMAIL")
    assert 0 == publishing.code, publishing.stdout + publishing.stderr
    assert "OUTBOX_CHANNEL_EMAIL" not in publishing.stdout + publishing.stderr
    (settings,) = started
    assert ("production", ("events",), None) == (
        settings.environment.value,
        settings.worker.lanes,
        settings.providers,
    )


@pytest.mark.parametrize(
    ("command", "named"),
    [
        (
            ("serve",),
            ("OUTBOX_DATABASE_URL", "OUTBOX_ADMIN_DATABASE_URL", "OUTBOX_SEAL_KEYS"),
        ),
        (("serve", "--only", "admin"), ("OUTBOX_ADMIN_DATABASE_URL", "OUTBOX_SEAL_KEYS")),
        (
            ("worker", "--lanes", "security,events,consumers"),
            (
                "OUTBOX_CHANNEL_EMAIL",
                "OUTBOX_CHANNEL_SMS",
                "OUTBOX_CHANNEL_WHATSAPP",
                "OUTBOX_WORKER_DATABASE_URL",
                "OUTBOX_CONSUMERS_DATABASE_URL",
                "OUTBOX_SEAL_KEYS",
            ),
        ),
        (("worker", "--lanes", "events"), ("OUTBOX_WORKER_DATABASE_URL",)),
    ],
)
def test_a_production_process_names_its_urls_keys_and_channels_in_one_round(
    tmp_path: Path, command: tuple[str, ...], named: tuple[str, ...]
) -> None:
    """Nothing set but the environment: every variable the process will need is named at
    once, the URLs its pools read and the seal keys with the settings, not one per restart."""
    outer: dict[str, str | None] = {name: None for name in os.environ if name.startswith("OUTBOX_")}
    result = CliRunner().invoke(
        app,
        list(command),
        env=outer | {"OUTBOX_ENV": "production", "OUTBOX_DATA_DIR": str(tmp_path)},
    )

    assert 3 == result.exit_code, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("OUTBOX_")]
    assert list(named) == [line.split(":", 1)[0] for line in lines]
    assert not (tmp_path / "postgres").exists()  # no embedded server was started
