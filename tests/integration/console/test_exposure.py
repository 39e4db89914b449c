"""The console refuses to listen beyond loopback without staff authentication over https, and
says so: ``outboxctl serve`` exits 3 naming OUTBOX_CONSOLE_ORIGIN."""

from __future__ import annotations

from pathlib import Path

import pytest

from outbox.entrypoints.cli.exit_codes import ExitCode
from tests.integration.providers.network import free_port
from tests.outboxctl import run_outboxctl

pytestmark = pytest.mark.integration


def _serve(database_url: str, tmp_path: Path, **extra: str) -> tuple[int, str]:
    result = run_outboxctl(
        "serve",
        variables={
            "OUTBOX_DATABASE_URL": database_url,
            "OUTBOX_DATA_DIR": str(tmp_path),
            "OUTBOX_LOG_FORMAT": "json",
            "OUTBOX_HTTP_PORT": str(free_port()),
            "OUTBOX_ADMIN_PORT": str(free_port()),
            "OUTBOX_ADMIN_HOST": "0.0.0.0",  # noqa: S104 - the exposure under test
            **extra,
        },
    )
    return result.returncode, result.stderr


@pytest.mark.parametrize("origin", [None, "http://ops.example.com"], ids=["unset", "plain-http"])
def test_serve_refuses_a_console_beyond_loopback_without_an_https_origin(
    database_url: str, tmp_path: Path, origin: str | None
):
    extra = {} if origin is None else {"OUTBOX_CONSOLE_ORIGIN": origin}

    code, stderr = _serve(database_url, tmp_path, **extra)

    assert ExitCode.CONFIGURATION == code
    assert "OUTBOX_CONSOLE_ORIGIN" in stderr
    assert "Traceback" not in stderr
