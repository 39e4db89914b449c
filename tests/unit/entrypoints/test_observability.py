"""Logging and metrics set-up, proven on the real rendered output."""

from __future__ import annotations

import io
import json
import logging
import urllib.request
from datetime import UTC, datetime
from typing import Any, NoReturn

import pytest
import structlog
from prometheus_client import CollectorRegistry

from outbox.entrypoints.observability import (
    build_telemetry,
    configure_logging,
    new_registry,
    render_metrics,
    serve_metrics,
)

CODE = "482913"
EMAIL = "alice.liddell@example.com"
PHONE = "+34612345678"
BEARER = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0.Zm9vYmFy"
ENVELOPE = (
    "v1.20260101-example.QEFCQ0RFRkdISUpLTE1OTw.YGFiY2RlZmdoaWpr.W8L99E3QS5wRzlR9_PNYOBpiZ14HrA"
)
LINK_TOKEN = "tQ3v_8LrX2mK9pZ1wE7yU4iO6aS5dF0gH"
LOCAL_SECRET = "local-variable-secret-value"
SECRETS = (CODE, EMAIL, PHONE, BEARER, ENVELOPE, LINK_TOKEN, LOCAL_SECRET, "alice.liddell")


class ProviderError(Exception):
    """A provider error whose message quotes everything it should not."""

    code = "550"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def output(restore_logging: None) -> io.StringIO:
    stream = io.StringIO()
    configure_logging("json", "debug", stream=stream)
    return stream


def _lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def _send(destination: str) -> NoReturn:
    secret = LOCAL_SECRET  # a local a traceback renderer with show_locals would print
    raise ProviderError(
        f"550 rejected {destination} code {CODE} Authorization: Bearer {BEARER} {ENVELOPE} {secret}"
    )


def test_an_event_is_one_json_line_with_flat_fields(output: io.StringIO) -> None:
    build_telemetry(CollectorRegistry()).event(
        "message.published", message_id="0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", attempt=1
    )

    [line] = _lines(output)
    assert {
        "level": "info",
        "logger": "outbox",
        "event": "message.published",
        "message_id": "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
        "attempt": 1,
    } == {k: v for k, v in line.items() if k != "timestamp"}
    assert line["timestamp"].endswith("Z")
    assert UTC == datetime.fromisoformat(line["timestamp"]).tzinfo


def test_no_secret_reaches_the_output_through_fields_or_exceptions(output: io.StringIO) -> None:
    telemetry = build_telemetry(CollectorRegistry())
    telemetry.event(
        "delivery.failed",
        level="warning",
        destination=EMAIL,
        code=CODE,
        authorization=f"Bearer {BEARER}",
        envelope=ENVELOPE,
        detail=f"to {EMAIL} / {PHONE}: code {CODE}, Bearer {BEARER}, {ENVELOPE}",
        link=f"https://app.example/magic#token={LINK_TOKEN}",
    )
    log = structlog.get_logger()
    try:
        _send(EMAIL)
    except ProviderError:
        log.exception("delivery.crashed", destination=PHONE)
    try:
        _send(PHONE)
    except ProviderError:
        logging.getLogger("some.library").exception("failed for %s with %s", EMAIL, CODE)

    text = output.getvalue()
    assert [] == [secret for secret in SECRETS if secret in text]
    delivery, crashed, library = _lines(output)
    assert "a***@example.com" == delivery["destination"]
    assert {"error": "ProviderError", "error_code": "550", "destination": "+34***78"}.items() <= (
        crashed.items()
    )
    assert {"logger": "some.library", "level": "error", "error": "ProviderError"}.items() <= (
        library.items()
    )


def test_an_exception_is_rendered_as_name_and_code_without_message_or_traceback(
    output: io.StringIO,
) -> None:
    try:
        _send(EMAIL)
    except ProviderError:
        structlog.get_logger().exception("delivery.crashed")

    [line] = _lines(output)
    assert {"error": "ProviderError", "error_code": "550"}.items() <= line.items()
    assert not {"exception", "exc_info", "traceback", "stack"} & line.keys()
    assert "rejected" not in output.getvalue()
    assert "Traceback" not in output.getvalue()


def test_the_console_renderer_never_prints_a_message_or_locals(restore_logging: None) -> None:
    stream = _Terminal()
    configure_logging("auto", "info", stream=stream, development=True)
    try:
        _send(EMAIL)
    except ProviderError:
        structlog.get_logger().exception("delivery.crashed")
        logging.getLogger("lib").exception("oops")

    text = stream.getvalue()
    assert "delivery.crashed" in text
    assert "ProviderError" in text
    assert [] == [secret for secret in SECRETS if secret in text]
    assert "Traceback" not in text
    assert not text.lstrip().startswith("{")


@pytest.mark.parametrize(
    ("fmt", "stream", "development", "json_expected"),
    [
        ("auto", io.StringIO(), True, True),  # not a terminal
        ("auto", _Terminal(), False, True),  # a terminal, but not development
        ("auto", _Terminal(), True, False),
        ("json", _Terminal(), True, True),
        ("console", io.StringIO(), False, False),
    ],
)
def test_json_is_chosen_outside_a_development_terminal(
    restore_logging: None,
    fmt: str,
    stream: io.StringIO,
    development: bool,
    json_expected: bool,
) -> None:
    stream.seek(0)
    stream.truncate()
    configure_logging(fmt, "info", stream=stream, development=development)
    structlog.get_logger().info("x.happened")

    assert json_expected == stream.getvalue().startswith("{")


def test_events_below_the_level_are_not_written(restore_logging: None) -> None:
    stream = io.StringIO()
    configure_logging("json", "warning", stream=stream)
    telemetry = build_telemetry(CollectorRegistry())
    telemetry.event("x.debug", level="debug")
    telemetry.event("x.info")
    telemetry.event("x.warning", level="warning")
    logging.getLogger("lib").info("quiet")
    logging.getLogger("lib").error("loud")

    assert ["x.warning", "loud"] == [line["event"] for line in _lines(stream)]


def test_context_variables_are_merged_into_every_line(output: io.StringIO) -> None:
    structlog.contextvars.bind_contextvars(worker="w-1")
    build_telemetry(CollectorRegistry()).event("x.happened")
    logging.getLogger("lib").warning("from the standard library")

    assert ["w-1", "w-1"] == [line["worker"] for line in _lines(output)]


def test_configuring_twice_writes_each_line_once(restore_logging: None) -> None:
    first, second = io.StringIO(), io.StringIO()
    configure_logging("json", "info", stream=first)
    configure_logging("json", "info", stream=second)
    logging.getLogger("lib").warning("once")
    structlog.get_logger().warning("x.once")

    assert "" == first.getvalue()
    assert ["once", "x.once"] == [line["event"] for line in _lines(second)]


@pytest.mark.parametrize(("fmt", "level"), [("xml", "info"), ("json", "verbose")])
def test_an_unknown_format_or_level_is_refused(fmt: str, level: str) -> None:
    with pytest.raises(ValueError, match="unknown log"):
        configure_logging(fmt, level, stream=io.StringIO())


def test_the_metrics_route_renders_the_registry() -> None:
    registry = CollectorRegistry()
    build_telemetry(registry).count("outbox_sweep_rows_total", 3, sweep="expiry")

    body, content_type = render_metrics(registry)

    assert content_type.startswith("text/plain")
    assert b'outbox_sweep_rows_total{sweep="expiry"} 3.0' in body


def test_the_worker_serves_metrics_over_http() -> None:
    registry = new_registry()
    build_telemetry(registry).observe("outbox_claim_batch_size", 10)
    server = serve_metrics(registry, port=0)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=5) as r:
            body = r.read().decode()
    finally:
        server.close()

    assert "outbox_claim_batch_size_count 1.0" in body
    assert "process_resident_memory_bytes" in body


def test_a_library_exception_argument_is_logged_as_its_name_and_code(
    output: io.StringIO,
) -> None:
    """psycopg's pool logs ``"error connecting in %r: %s", name, error``: the text quotes
    hosts, users and databases; only the class and code may reach the line."""
    error = ProviderError(f"connection to {EMAIL} at postgresql://u:{LOCAL_SECRET}@db failed")
    logging.getLogger("psycopg.pool").warning("error connecting in %r: %s", "outbox", error)
    logging.getLogger("uvicorn.error").error(error)

    pool, server = _lines(output)
    assert "error connecting in 'outbox': ProviderError (550)" == pool["event"]
    assert "ProviderError (550)" == server["event"]
    assert LOCAL_SECRET not in output.getvalue()


def test_a_url_password_is_redacted_from_any_line(output: io.StringIO) -> None:
    logging.getLogger("some.library").warning(
        "retrying postgresql://outbox:%s@db.internal:5432/outbox", LOCAL_SECRET
    )

    [line] = _lines(output)
    assert "retrying postgresql://outbox:[REDACTED]@db.internal:5432/outbox" == line["event"]


def test_chatty_client_libraries_stay_at_warning_even_in_debug(output: io.StringIO) -> None:
    """botocore's debug lines carry request bodies (a code, a destination)."""
    logging.getLogger("botocore.endpoint").debug("Making request with body %s", CODE)
    logging.getLogger("botocore.credentials").warning("credentials expire soon")
    logging.getLogger("some.library").debug("other debug lines still show")

    assert ["credentials expire soon", "other debug lines still show"] == [
        line["event"] for line in _lines(output)
    ]
