"""Bad configuration, through the real ``outboxctl``: exit 3, every variable named, nothing else.

Each case starts the installed command as a subprocess, so what is asserted is what an
operator sees: the exit code, the variable's name on stderr, no traceback (plain or
rich), and no secret quoted back.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

OUTBOXCTL = str(Path(sys.executable).with_name("outboxctl"))
PASSWORD = "hunter2-s3cret"
# Never reached: the settings are refused before any connection is made.
UNREACHABLE = f"postgresql://outbox:{PASSWORD}@127.0.0.1:9/outbox"


def _run(tmp_path: Path, *command: str, **variables: str) -> subprocess.CompletedProcess[str]:
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith("OUTBOX_")},
        "OUTBOX_DATA_DIR": str(tmp_path),
        "OUTBOX_DATABASE_URL": UNREACHABLE,
        "OUTBOX_LOG_FORMAT": "json",
        **variables,
    }
    return subprocess.run(
        [OUTBOXCTL, *(command or ("worker", "--drain"))],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _assert_refused(result: subprocess.CompletedProcess[str], *variables: str) -> None:
    output = result.stdout + result.stderr
    assert 3 == result.returncode, output
    for variable in variables:
        assert variable in result.stderr
    assert "Traceback" not in output
    assert "╭" not in output  # rich's traceback box
    assert PASSWORD not in output


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


def test_a_worker_of_tenant_events_alone_needs_no_provider_settings(tmp_path: Path) -> None:
    """Only the security lane sends: its provider variables are asked of it alone."""
    sending = _run(tmp_path, "worker", "--drain", "--lanes", "security", OUTBOX_ENV="production")
    publishing = _run(tmp_path, "worker", "--drain", "--lanes", "events", OUTBOX_ENV="production")

    _assert_refused(sending, "OUTBOX_CHANNEL_EMAIL")
    assert "OUTBOX_CHANNEL_EMAIL" not in publishing.stdout + publishing.stderr
