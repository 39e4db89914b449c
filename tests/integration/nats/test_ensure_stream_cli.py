"""``outboxctl nats ensure-stream``: creates the stream, then reports what differs."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from tests.integration.providers.network import free_port
from tests.nats_server import NatsServer
from tests.outboxctl import invoke_outboxctl, run_outboxctl


def _ensure(
    tmp_path: Path, url: str, stream: str, *extra: str, window: str = "120"
) -> tuple[int, dict[str, object] | None, str]:
    result = invoke_outboxctl(
        "nats",
        "ensure-stream",
        "--json",
        *extra,
        variables={
            "OUTBOX_DATA_DIR": str(tmp_path),
            "OUTBOX_NATS_URL": url,
            "OUTBOX_NATS_STREAM": stream,
            "OUTBOX_NATS_SUBJECT_PREFIX": f"{stream.lower()}.events",
            "OUTBOX_NATS_DUPLICATE_WINDOW_SECONDS": window,
            "OUTBOX_NATS_STORAGE": "memory",
        },
    )
    body = json.loads(result.stdout) if result.stdout.strip() else None
    return result.returncode, body, result.stderr


def test_ensure_stream_creates_then_matches_then_reports_and_fixes_a_difference(
    tmp_path: Path, nats_server: NatsServer
) -> None:
    stream = f"S{uuid.uuid4().hex[:10]}"

    assert (0, "created") == _action(_ensure(tmp_path, nats_server.url, stream))
    assert (0, "matches") == _action(_ensure(tmp_path, nats_server.url, stream))

    code, body, _ = _ensure(tmp_path, nats_server.url, stream, window="30")
    assert 6 == code
    assert body is not None
    assert "differs" == body["action"]
    assert [{"setting": "duplicate_window_seconds", "expected": "30.0", "actual": "120.0"}] == body[
        "differences"
    ]

    assert (0, "updated") == _action(
        _ensure(tmp_path, nats_server.url, stream, "--update", window="30")
    )
    assert (0, "matches") == _action(_ensure(tmp_path, nats_server.url, stream, window="30"))


def test_ensure_stream_names_an_unreachable_broker_without_its_password(tmp_path: Path) -> None:
    code, body, stderr = _ensure(tmp_path, f"nats://relay:s3cret@127.0.0.1:{free_port()}", "S1")

    assert (1, None) == (code, body)
    assert "no NATS server answered at" in stderr
    assert "***@127.0.0.1:" in stderr
    assert "s3cret" not in stderr


def test_ensure_stream_without_a_nats_url_is_a_configuration_error(tmp_path: Path) -> None:
    result = run_outboxctl("nats", "ensure-stream", variables={"OUTBOX_DATA_DIR": str(tmp_path)})

    assert 3 == result.returncode
    assert "OUTBOX_NATS_URL" in result.stderr


def _action(result: tuple[int, dict[str, object] | None, str]) -> tuple[int, object]:
    code, body, stderr = result
    assert body is not None, stderr
    return code, body["action"]
