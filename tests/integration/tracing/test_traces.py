"""One trace per message, through the real app and the real worker on real PostgreSQL: the
request that enqueues, the claim, the send and the record share the caller's trace id, and
no span carries a secret."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from outbox.adapters.crypto.keyring import generate_key, key_line
from outbox.adapters.telemetry.tracing_otel import OtelTracing
from outbox.domain.channels import Channel
from outbox.domain.delivery.failures import DeliveryFailure, FailureClass
from outbox.entrypoints.bootstrap.api import api_identity_services
from outbox.entrypoints.bootstrap.database import DatabaseAccess, database_pool
from outbox.entrypoints.bootstrap.parts import ProcessParts, build_process_parts, http_middleware
from outbox.entrypoints.bootstrap.worker import worker_services
from outbox.entrypoints.http.app import create_app
from outbox.entrypoints.settings.tree import Settings, load_settings
from tests.fakes.providers import RecordingProvider

pytestmark = pytest.mark.integration

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER = f"00-{TRACE_ID}-00f067aa0ba902b7-01"  # the upstream's span: the request's parent
ACCOUNT = {"identifier": "alice@example.com"}
SEAL_KEY = key_line(generate_key("trace"))


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return load_settings(
        {
            "OUTBOX_DATABASE_URL": database_url,
            "OUTBOX_API_DB_ROLE": "identity_service",
            "OUTBOX_WORKER_DB_ROLE": "outbox_worker",
            "OUTBOX_SEAL_KEYS": SEAL_KEY,
            "OUTBOX_DATA_DIR": str(tmp_path),
        },
        providers=True,
    )


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def parts(settings: Settings, exporter: InMemorySpanExporter) -> ProcessParts:
    tracing = OtelTracing.exporting_to(exporter, service="outbox-test")
    return build_process_parts(settings, tracing=tracing, process_metrics=False)


@pytest.fixture
async def api(settings: Settings, parts: ProcessParts) -> AsyncIterator[httpx.AsyncClient]:
    """The API app of ``outboxctl serve``, built by the composition root, over ASGI."""
    async with database_pool(settings, DatabaseAccess.API) as pool:
        services = api_identity_services(settings, parts, pool)
        app = create_app(services, middleware=http_middleware(parts))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
            yield client


def _strings(span: ReadableSpan) -> list[str]:
    """Everything a span exports as text: name, attributes, events, status, resource."""
    values = [span.name, str(span.status.description or "")]
    values += [f"{k}={v}" for k, v in (span.attributes or {}).items()]
    values += [f"{k}={v}" for k, v in span.resource.attributes.items()]
    for event in span.events:
        values += [event.name, *(f"{k}={v}" for k, v in (event.attributes or {}).items())]
    return values


async def test_one_trace_joins_the_request_the_claim_the_send_and_the_record(
    settings: Settings, parts: ProcessParts, api: httpx.AsyncClient, exporter: InMemorySpanExporter
) -> None:
    answer = await api.post("/sign-ups", json=ACCOUNT, headers={"traceparent": CALLER})
    assert 201 == answer.status_code
    provider = RecordingProvider()
    async with worker_services(
        settings, parts=parts, providers={Channel.EMAIL: provider}
    ) as worker:
        result = await worker.dispatch()
    assert 1 == result.published

    spans = exporter.get_finished_spans()
    (server,) = [s for s in spans if s.kind.name == "SERVER"]
    by_name = {s.name: s for s in spans if s.name.startswith("outbox.")}
    assert {"outbox.claim", "outbox.send", "outbox.record"} == set(by_name)
    # One trace id, the caller's, from the request to the record.
    assert {TRACE_ID} == {format(s.context.trace_id, "032x") for s in spans}
    assert server.parent is not None
    assert "00f067aa0ba902b7" == format(server.parent.span_id, "016x")
    # The worker's spans hang under the request that enqueued the message.
    for span in by_name.values():
        assert span.parent is not None
        assert server.context.span_id == span.parent.span_id, span.name
    (delivery,) = provider.sent
    message_id = str(delivery.message_id)
    assert {message_id} == {s.attributes["messaging.message.id"] for s in by_name.values()}
    assert "published" == by_name["outbox.record"].attributes["outbox.outcome"]
    assert "recording" == by_name["outbox.send"].attributes["outbox.provider"]

    # Nothing secret in any span: not the code, the address or the key.
    (code,) = re.findall(r"\b\d{6}\b", delivery.content.text)
    exported = "\n".join(text for span in spans for text in _strings(span))
    for secret in (code, ACCOUNT["identifier"], SEAL_KEY.split(":")[1]):
        assert secret not in exported


async def test_a_request_without_a_caller_starts_its_own_trace_through_to_the_record(
    settings: Settings, parts: ProcessParts, api: httpx.AsyncClient, exporter: InMemorySpanExporter
) -> None:
    assert 201 == (await api.post("/sign-ups", json=ACCOUNT)).status_code
    async with worker_services(
        settings, parts=parts, providers={Channel.EMAIL: RecordingProvider()}
    ) as worker:
        await worker.dispatch()

    spans = exporter.get_finished_spans()
    (server,) = [s for s in spans if s.kind.name == "SERVER"]
    assert server.parent is None
    assert 4 == len(spans)
    assert {server.context.trace_id} == {s.context.trace_id for s in spans}


async def test_a_refused_send_is_an_error_span_named_by_its_class_only(
    settings: Settings, parts: ProcessParts, api: httpx.AsyncClient, exporter: InMemorySpanExporter
) -> None:
    """What the provider said (it may echo the address) never reaches the trace."""
    assert 201 == (await api.post("/sign-ups", json=ACCOUNT)).status_code
    provider = RecordingProvider()
    echo = f"550 5.1.1 <{ACCOUNT['identifier']}>: mailbox unavailable"
    provider.fail_next(
        DeliveryFailure(failure_class=FailureClass.REJECTED, code="550", detail=echo)
    )
    async with worker_services(
        settings, parts=parts, providers={Channel.EMAIL: provider}
    ) as worker:
        await worker.dispatch()

    spans = exporter.get_finished_spans()
    (send,) = [s for s in spans if s.name == "outbox.send"]
    assert (StatusCode.ERROR, "REJECTED") == (send.status.status_code, send.status.description)
    assert "REJECTED" == send.attributes["outbox.failure_class"]
    assert () == send.events  # no exception event, so no exception message
    (record,) = [s for s in spans if s.name == "outbox.record"]
    assert "REJECTED" == record.attributes["outbox.failure_class"]
    exported = "\n".join(text for span in spans for text in _strings(span))
    assert ACCOUNT["identifier"] not in exported
    assert "mailbox" not in exported
