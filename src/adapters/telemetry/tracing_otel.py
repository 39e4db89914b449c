"""OpenTelemetry tracing (the ``otel`` extra): one trace per message, from the request that
enqueued it through the claim, the send and the record.

The producer's span context is stored with the message as a W3C traceparent; the worker
makes each message's claim, send and record spans children of it, so one trace id joins
the HTTP request to the delivery however much later and wherever the worker runs.

Span attributes name the message (id, purpose, channel, attempt, provider, outcome) and
never carry a destination, a code, a token or an exception's message.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any
from uuid import UUID

import attrs
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from outbox.application.delivery.errors import DeliveryFailed
from outbox.application.delivery.ports import (
    AttemptRecord,
    ClaimedMessage,
    Delivery,
    DeliveryProvider,
    DispatchStore,
)
from outbox.domain.delivery.messages import TRACEPARENT
from outbox.domain.delivery.outcomes import RecordResult
from outbox.domain.delivery.retention import RetentionPolicy

INSTRUMENTATION = "outbox"
_PROPAGATOR = TraceContextTextMapPropagator()


class OtelTracing:
    """Tracing over one tracer provider; the worker's wrappers share the claimed contexts."""

    def __init__(self, provider: TracerProvider) -> None:
        self.tracer_provider = provider
        self._tracer = provider.get_tracer(INSTRUMENTATION)
        # Each claimed message's parent context, from its claim until its record.
        self._contexts: dict[UUID, Context] = {}

    @classmethod
    def exporting_otlp(cls, *, service: str) -> OtelTracing:
        """Batches exported over OTLP/HTTP; the SDK reads OTEL_EXPORTER_OTLP_*, OTEL_BSP_*,
        OTEL_TRACES_SAMPLER, OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES itself."""
        provider = TracerProvider(resource=_resource(service))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        return cls(provider)

    @classmethod
    def exporting_to(cls, exporter: SpanExporter, *, service: str) -> OtelTracing:
        """Each span handed to ``exporter`` as it ends (tests use the in-memory exporter)."""
        provider = TracerProvider(resource=_resource(service))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        return cls(provider)

    def current_traceparent(self) -> str | None:
        """The W3C traceparent of the current span, or None when there is none."""
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier)
        value = carrier.get("traceparent")
        return value if value is not None and TRACEPARENT.fullmatch(value) else None

    def asgi_middleware(self) -> Callable[[Any], Any]:
        """A middleware factory that opens a server span per HTTP request (W3C headers in)."""
        provider = self.tracer_provider

        def middleware(app: Any) -> Any:
            # Request and response bodies are never recorded; no header is captured.
            return OpenTelemetryMiddleware(
                app, tracer_provider=provider, exclude_spans=["receive", "send"]
            )

        return middleware

    def traced_store(self, store: DispatchStore) -> DispatchStore:
        """``store``, with a claim and a record span in each claimed message's trace."""
        return _TracedStore(store, self._tracer, self._contexts)

    def traced_provider(self, provider: DeliveryProvider) -> DeliveryProvider:
        """``provider``, with a send span in each message's trace."""
        return _TracedProvider(provider, self._tracer, self._contexts)

    def shutdown(self) -> None:
        """Export what is buffered and stop."""
        self.tracer_provider.shutdown()


def _resource(service: str) -> Resource:
    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: service}))
    return resource


def parent_context(traceparent: str | None) -> Context | None:
    """The context a stored traceparent names, or None when there is none or it is malformed."""
    if traceparent is None or not TRACEPARENT.fullmatch(traceparent):
        return None
    context = _PROPAGATOR.extract({"traceparent": traceparent})
    if not trace.get_current_span(context).get_span_context().is_valid:
        return None
    return context


def _message_attributes(message: ClaimedMessage) -> dict[str, str | int]:
    return {
        "messaging.system": "outbox",
        "messaging.message.id": str(message.id),
        "outbox.purpose": message.purpose.value,
        "outbox.channel": message.channel.value,
        "outbox.attempt": message.attempts + 1,
    }


@attrs.frozen
class _TracedStore:
    """A DispatchStore whose claims and records are spans in each message's trace."""

    _inner: DispatchStore
    _tracer: trace.Tracer
    _contexts: dict[UUID, Context]  # shared with the providers: the claimed, unrecorded

    async def claim(
        self,
        *,
        owner: str,
        limit: int,
        lease: timedelta,
        urgent: bool = False,
        leave_urgent: timedelta = timedelta(0),
    ) -> Sequence[ClaimedMessage]:
        """Claim; each claimed message's trace gets an ``outbox.claim`` span of the call."""
        start = time.time_ns()
        claimed = await self._inner.claim(
            owner=owner, limit=limit, lease=lease, urgent=urgent, leave_urgent=leave_urgent
        )
        end = time.time_ns()
        for message in claimed:
            parent = parent_context(message.trace_context)
            if parent is None:
                continue
            self._contexts[message.id] = parent
            span = self._tracer.start_span(
                "outbox.claim",
                context=parent,
                kind=SpanKind.CONSUMER,
                start_time=start,
                attributes=_message_attributes(message),
            )
            span.end(end_time=end)
        return claimed

    async def record(self, records: Sequence[AttemptRecord]) -> Sequence[RecordResult]:
        """Record; each message's trace gets an ``outbox.record`` span of the call."""
        start = time.time_ns()
        results: Sequence[RecordResult] = ()
        failure: str | None = None
        try:
            results = await self._inner.record(records)
        except BaseException as error:
            failure = type(error).__name__
            raise
        finally:
            end = time.time_ns()
            answers: list[RecordResult | None] = [*results] or [None] * len(records)
            for record, result in zip(records, answers, strict=True):
                parent = self._contexts.pop(record.message_id, None)
                if parent is not None:
                    self._record_span(record, result, parent, failure=failure, span=(start, end))
        return results

    def _record_span(
        self,
        record: AttemptRecord,
        result: RecordResult | None,
        parent: Context,
        *,
        failure: str | None,
        span: tuple[int, int],
    ) -> None:
        attributes: dict[str, str | int] = {
            "messaging.system": "outbox",
            "messaging.message.id": str(record.message_id),
            "outbox.attempt": record.attempt,
            "outbox.outcome": type(record.outcome).__name__.lower(),
        }
        failure_class = getattr(record.outcome, "failure_class", None) or getattr(
            record.outcome, "reason", None
        )
        if failure_class is not None:
            attributes["outbox.failure_class"] = str(failure_class.value)
        if record.provider:
            attributes["outbox.provider"] = record.provider
        if result is not None:
            attributes["outbox.record_result"] = result.value
        start, end = span
        recorded = self._tracer.start_span(
            "outbox.record", context=parent, start_time=start, attributes=attributes
        )
        if failure is not None:
            recorded.set_status(StatusCode.ERROR, failure)
        recorded.end(end_time=end)

    async def expire(self, *, limit: int) -> int:
        """Delegated untraced: a sweep belongs to no message's trace."""
        return await self._inner.expire(limit=limit)

    async def purge(self, *, retention: RetentionPolicy, limit: int) -> int:
        """Delegated untraced."""
        return await self._inner.purge(retention=retention, limit=limit)

    async def wait_for_work(self, within: float) -> None:
        """Delegated untraced."""
        await self._inner.wait_for_work(within)


@attrs.frozen
class _TracedProvider:
    """A DeliveryProvider whose sends are ``outbox.send`` spans in each message's trace."""

    _inner: DeliveryProvider
    _tracer: trace.Tracer
    _contexts: dict[UUID, Context]

    @property
    def name(self) -> str:
        """The wrapped provider's name."""
        return self._inner.name

    async def send(self, delivery: Delivery) -> str:
        """Send through the wrapped provider inside a span; a refusal is named by class only."""
        parent = self._contexts.get(delivery.message_id)
        if parent is None:
            return await self._inner.send(delivery)
        with self._tracer.start_as_current_span(
            "outbox.send",
            context=parent,
            kind=SpanKind.PRODUCER,
            attributes={
                "messaging.system": "outbox",
                "messaging.message.id": str(delivery.message_id),
                "outbox.channel": delivery.channel.value,
                "outbox.provider": self._inner.name,
            },
            # An exception's text may carry what a provider echoed back: never record it.
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                return await self._inner.send(delivery)
            except DeliveryFailed as refused:
                failure_class = refused.failure.failure_class.value
                span.set_attribute("outbox.failure_class", failure_class)
                span.set_status(StatusCode.ERROR, failure_class)
                raise
            except Exception as error:
                span.set_status(StatusCode.ERROR, type(error).__name__)
                raise
