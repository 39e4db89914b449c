"""Traces, when the ``otel`` extra is installed and an exporter is configured; else nothing.

Nothing here imports OpenTelemetry: without the extra, ``start_tracing`` answers None and the
process runs untraced, exactly as before. With it, ``adapters/telemetry/tracing_otel.py``
does the work. The standard ``OTEL_*`` variables configure it (the SDK reads them itself):
tracing starts when ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``
is set, or ``OTEL_TRACES_EXPORTER=otlp``, unless ``OTEL_SDK_DISABLED=true``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from outbox.application.delivery.ports import DeliveryProvider, DispatchStore

_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


class Tracing(Protocol):
    """A process's tracing: the context to store with a message, and traced worker ports."""

    def current_traceparent(self) -> str | None:
        """The W3C traceparent of the span now current, or None outside any sampled span."""
        ...

    def asgi_middleware(self) -> Callable[[Any], Any]:
        """An ASGI middleware factory: one server span per HTTP request."""
        ...

    def traced_store(self, store: DispatchStore) -> DispatchStore:
        """``store``, whose claims and records add spans to each message's own trace."""
        ...

    def traced_provider(self, provider: DeliveryProvider) -> DeliveryProvider:
        """``provider``, whose sends are spans in each message's own trace."""
        ...

    def shutdown(self) -> None:
        """Export what is buffered and stop."""
        ...


def tracing_requested(environ: Mapping[str, str]) -> bool:
    """Whether the ``OTEL_*`` variables ask for traces to be exported."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter:
        return exporter == "otlp"
    return any(environ.get(name, "").strip() for name in _ENDPOINTS)


def tracing_installed() -> bool:
    """Whether the ``otel`` extra (the OpenTelemetry SDK and its OTLP exporter) is installed."""
    try:
        return all(
            importlib.util.find_spec(module) is not None
            for module in ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http")
        )
    except ModuleNotFoundError:  # a parent package is missing: not installed either
        return False


def start_tracing(environ: Mapping[str, str], *, service: str) -> Tracing | None:
    """The process's tracing, exporting over OTLP as the ``OTEL_*`` variables say; None when
    they ask for none or the extra is not installed. ``service`` is the default
    ``service.name`` (``OTEL_SERVICE_NAME`` wins)."""
    if not tracing_requested(environ) or not tracing_installed():
        return None
    from outbox.adapters.telemetry.tracing_otel import OtelTracing  # noqa: PLC0415 - the optional extra

    return OtelTracing.exporting_otlp(service=service)
