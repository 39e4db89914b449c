"""The telemetry port behind structlog events and Prometheus metrics."""

from __future__ import annotations

import re
from collections.abc import Iterable

import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from outbox.adapters.telemetry.metrics import CATALOGUE, Kind, MetricSpec, Registered, register

LOGGER = "outbox"
SECURITY_LOGGER = "outbox.security"  # security monitoring routes on this name
SECURITY_PREFIX = "security."

LEVELS = {
    "debug": "debug",
    "info": "info",
    "warning": "warning",
    "warn": "warning",
    "error": "error",
    "critical": "critical",
    "alert": "critical",
    "fatal": "critical",
}
_EVENT_NAME = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)+", re.ASCII)
# Keys structlog or the renderer own; a field of the same name gets a trailing underscore.
_RESERVED = frozenset({"event", "level", "logger", "timestamp", "exc_info", "stack_info"})
_MAX_WARNINGS = 1000  # distinct one-time warnings kept; beyond that, stay quiet
_MAX_CACHED = 10_000  # resolved metric children kept; beyond that, resolved on every call


class StructlogPrometheusTelemetry:
    """Writes each event as one structlog line and keeps the catalogue's Prometheus metrics.

    Nothing it is given can crash the caller: an unknown metric, a misused kind, a bad
    label or level is ignored and reported once as a ``telemetry.*`` warning.
    """

    def __init__(
        self, registry: CollectorRegistry, *, catalogue: Iterable[MetricSpec] = CATALOGUE
    ) -> None:
        """Register the catalogue's metrics in ``registry`` (a dedicated one, never the global).

        An unlabelled gauge is exported only once this process sets it: a gauge another
        process owns (the backlog's oldest due age, set by the admin listener; the worker's
        sends in flight) would otherwise read 0 here, as if it were measured.
        """
        self._metrics = register(registry, catalogue)
        self._registry = registry
        self._dormant = {
            name
            for name, registered in self._metrics.items()
            if registered.spec.kind is Kind.GAUGE and not registered.spec.labels
        }
        for name in self._dormant:
            registry.unregister(self._metrics[name].metric)
        events = self._metrics.get("outbox_log_events_total")
        self._events = events.metric if events and isinstance(events.metric, Counter) else None
        # A lazy proxy: it picks up the logging configuration made before its first use.
        self._log = structlog.get_logger()
        self._warned: set[tuple[str, str]] = set()
        # Resolved Prometheus children, so the hot path (an event or an observation per
        # message) skips validation and labels(): bounded by the names and label values the
        # code uses, and by _MAX_CACHED (docs/benchmarks.md).
        self._event_children: dict[tuple[str, str], Counter] = {}
        self._children: dict[
            tuple[str, Kind, tuple[tuple[str, str], ...]], Counter | Gauge | Histogram
        ] = {}

    def event(
        self, name: str, /, *, level: str = "info", **fields: str | int | float | bool | None
    ) -> None:
        """Log ``name`` with flat ``fields``; ``security.*`` events go to the security logger."""
        method = LEVELS.get(level)
        if method is None:
            self._warn_once("telemetry.unknown_level", level=level)
            method = "warning"
        if not _RESERVED.isdisjoint(fields):
            fields = {f"{k}_" if k in _RESERVED else k: v for k, v in fields.items()}
        logger = SECURITY_LOGGER if name.startswith(SECURITY_PREFIX) else LOGGER
        getattr(self._log, method)(name, logger=logger, **fields)
        if self._events is not None:
            child = self._event_children.get((name, method))
            if child is None:
                valid = _EVENT_NAME.fullmatch(name) is not None and len(name) <= 100
                if not valid:
                    self._warn_once("telemetry.invalid_event_name", event_name=name)
                child = self._events.labels(name if valid else "invalid", method)
                if len(self._event_children) < _MAX_CACHED:
                    self._event_children[name, method] = child
            child.inc()

    def count(self, name: str, /, value: float = 1, **labels: str) -> None:
        """Add ``value`` to counter (or gauge) ``name``."""
        child = self._child(name, labels, refused=Kind.HISTOGRAM, call="count")
        if isinstance(child, Counter | Gauge):
            try:
                child.inc(value)
            except ValueError:  # a negative counter increment
                self._warn_once("telemetry.invalid_value", metric=name)

    def observe(self, name: str, /, value: float, **labels: str) -> None:
        """Record ``value`` in histogram ``name``, or set gauge ``name`` to it."""
        child = self._child(name, labels, refused=Kind.COUNTER, call="observe")
        if isinstance(child, Gauge):
            child.set(value)
        elif isinstance(child, Histogram):
            child.observe(value)

    def forget(self, name: str, /) -> None:
        """Remove every labelled child of gauge ``name``; it reports only what is set next."""
        registered = self._metrics.get(name)
        if registered is None or registered.spec.kind is not Kind.GAUGE:
            self._warn_once("telemetry.metric_misused", metric=name, call="forget")
            return
        if registered.spec.labels:
            registered.metric.clear()
            self._children = {k: v for k, v in self._children.items() if k[0] != name}

    def _child(
        self, name: str, labels: dict[str, str], *, refused: Kind, call: str
    ) -> Counter | Gauge | Histogram | None:
        """The labelled metric for this call; None (reported once) when it cannot be used."""
        key = (name, refused, tuple(labels.items()))
        child = self._children.get(key)
        if child is not None:
            return child
        registered = self._find(name, labels, refused=refused, call=call)
        if registered is None:
            return None
        if name in self._dormant:
            self._dormant.discard(name)
            self._registry.register(registered.metric)
        child = _labelled(registered, labels)
        if len(self._children) < _MAX_CACHED:
            self._children[key] = child
        return child

    def _find(
        self, name: str, labels: dict[str, str], *, refused: Kind, call: str
    ) -> Registered | None:
        registered = self._metrics.get(name)
        if registered is None:
            self._warn_once("telemetry.unknown_metric", metric=name)
            return None
        if registered.spec.kind is refused:
            self._warn_once("telemetry.metric_misused", metric=name, call=call)
            return None
        for label in labels.keys() - registered.label_set:
            self._warn_once("telemetry.unknown_label", metric=name, label=label)
        return registered

    def _warn_once(self, event: str, **fields: str) -> None:
        key = (event, "|".join(fields.values()))
        if key in self._warned or len(self._warned) >= _MAX_WARNINGS:
            return
        self._warned.add(key)
        self._log.warning(event, logger=LOGGER, **fields)


def _labelled(registered: Registered, labels: dict[str, str]) -> Counter | Gauge | Histogram:
    if not registered.spec.labels:
        return registered.metric
    return registered.metric.labels(*(str(labels.get(n, "")) for n in registered.spec.labels))
