"""In JSON mode every line a real process writes on stderr is JSON, libraries' lines included.

uvicorn's, Litestar's and psycopg's pool lines go through the same structlog chain as ours:
none carries an exception's text or a URL's password.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.providers.network import free_port
from tests.outboxctl import outboxctl_environment
from tests.postgres_server import url_with_password

pytestmark = pytest.mark.integration

OUTBOXCTL = str(Path(sys.executable).with_name("outboxctl"))
PASSWORD = "hunter2-s3cret"  # trust authentication ignores it; the logs must not show it


def _with_password(conninfo: str, database: str | None = None) -> str:
    return url_with_password(conninfo, PASSWORD, database=database)


def _environment(url: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        **outboxctl_environment({}),
        "OUTBOX_DATABASE_URL": url,
        "OUTBOX_API_DB_ROLE": "identity_service",
        "OUTBOX_DATA_DIR": str(tmp_path),
        "OUTBOX_LOG_FORMAT": "json",
        "OUTBOX_LOG_LEVEL": "debug",
        **extra,
    }


def _json_lines(stderr: str) -> list[dict[str, Any]]:
    lines = [line for line in stderr.splitlines() if line.strip()]
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except json.JSONDecodeError:
            pytest.fail(f"not a JSON line: {line!r}")
    assert PASSWORD not in stderr
    assert "Traceback" not in stderr
    return parsed


def test_every_line_of_outboxctl_serve_is_json(database_url: str, tmp_path: Path) -> None:
    port = free_port()
    process = subprocess.Popen(
        [OUTBOXCTL, "serve"],
        env=_environment(
            _with_password(database_url),
            tmp_path,
            OUTBOX_HTTP_PORT=str(port),
            OUTBOX_ADMIN_PORT=str(free_port()),
            OUTBOX_WEBHOOK_PORT=str(free_port()),
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{base}/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "outboxctl serve never became ready"
            time.sleep(0.1)
        httpx.get(f"{base}/no-such-route")
        httpx.post(
            f"{base}/sign-ups", content=b"{not json", headers={"content-type": "application/json"}
        )
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)

    lines = _json_lines(stderr)
    loggers = {line["logger"] for line in lines}
    assert {"uvicorn.error", "outbox"} <= loggers
    assert all({"timestamp", "level", "event", "logger"} <= line.keys() for line in lines)


def test_psycopg_pool_lines_carry_no_exception_text_or_password(
    database_url: str, tmp_path: Path
) -> None:
    """The pool retries a database that refuses the login for its whole connect timeout (two
    seconds here), logging each failure: the lines say which error, never its text (which
    quotes hosts, users and databases), and the command's own failure is a JSON line too."""
    missing = _with_password(database_url, "no_such_database")
    result = subprocess.run(
        [OUTBOXCTL, "backlog"],
        env=_environment(missing, tmp_path, OUTBOX_DB_CONNECT_TIMEOUT_SECONDS="2"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    lines = _json_lines(result.stderr)
    pool = [line for line in lines if line["logger"].startswith("psycopg")]
    assert pool, result.stderr
    assert "no_such_database" not in result.stderr
    assert "does not exist" not in result.stderr
    assert 4 == result.returncode
    [failed] = [line for line in lines if line["event"] == "command.failed"]
    assert {"level": "error", "exit_status": 4}.items() <= failed.items()
