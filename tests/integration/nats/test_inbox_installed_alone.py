"""A service that only runs an inbox: ``outboxctl inbox install`` into its empty database, then
the public ``run_inbox`` handles a relayed event there, as the service's own login, counting
it in the application's metrics registry."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from prometheus_client import generate_latest
from psycopg import sql

from outbox.adapters.nats.connection import NatsOptions
from outbox.adapters.nats.jetstream_target import JetStreamTarget
from outbox.inbox import InboxEvent, Metrics, run_inbox
from tests.fakes.telemetry import RecordingTelemetry
from tests.integration.nats.conftest import MakeEvent, make_stream
from tests.nats_server import NatsServer
from tests.outboxctl import run_outboxctl

pytestmark = pytest.mark.integration

SHIPMENTS = """
CREATE TABLE public.shipments (event_id uuid PRIMARY KEY, order_id text NOT NULL);
GRANT INSERT ON public.shipments TO inbox_consumer;
"""


@pytest.fixture
def service_login(empty_database_url: str) -> Iterator[str]:
    """A login granted inbox_consumer and nothing more, as the service runs its inbox; its
    name (created before the install, which makes the role: granted afterwards)."""
    name = f"test_shop_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
    yield name
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


async def _publish(url: str, stream: str, events: list[Any]) -> None:
    target = JetStreamTarget(
        options=NatsOptions(servers=(url,)),
        telemetry=RecordingTelemetry(),
        stream=stream,
        subject_prefix=stream.lower(),
    )
    try:
        assert [None] * len(events) == list(await target.publish(events))
    finally:
        await target.close()


async def test_an_installed_inbox_handles_an_event_and_a_second_install_is_a_no_op(
    nats_server: NatsServer,
    stream_name: str,
    make_event: MakeEvent,
    empty_database_url: str,
    service_login: str,
) -> None:
    install = {"OUTBOX_INBOX_DATABASE_URL": empty_database_url}
    first = run_outboxctl("inbox", "install", variables=install)
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(SHIPMENTS)
        conn.execute(sql.SQL("GRANT inbox_consumer TO {}").format(sql.Identifier(service_login)))
    await make_stream(nats_server.url, stream_name)
    event = make_event("order-7")
    await _publish(nats_server.url, stream_name, [event])

    async def ship(received: InboxEvent, transaction: Any) -> None:
        await transaction.execute(
            "INSERT INTO public.shipments (event_id, order_id) VALUES (%s, %s)",
            (received.event_id, received.aggregate_id),
        )

    metrics = Metrics()
    result = await run_inbox(
        ship,
        consumer="shop-shipping",
        database_url=psycopg.conninfo.make_conninfo(empty_database_url, user=service_login),
        environ={
            "OUTBOX_ENV": "production",  # the role check refuses a login that may do more
            "OUTBOX_NATS_URL": nats_server.url,
            "OUTBOX_NATS_STREAM": stream_name,
            "OUTBOX_NATS_SUBJECT_PREFIX": stream_name.lower(),
        },
        drain=True,
        metrics=metrics,
    )
    second = run_outboxctl("inbox", "install", variables=install)

    assert 0 == first.returncode, first.stderr
    assert "applied 0025_inbox\napplied 0039_inbox_consumers_by_login\n" == first.stdout
    assert 1 == result.handled
    assert (
        'outbox_inbox_events_total{consumer="shop-shipping",outcome="handled"} 1.0'
        in generate_latest(metrics.registry).decode()
    )
    with psycopg.connect(empty_database_url) as conn:
        assert [(event.event_id, "order-7")] == conn.execute(
            "SELECT event_id, order_id FROM public.shipments"
        ).fetchall()
        assert [("inbox",), ("public",)] == conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%'"
            " AND nspname <> 'information_schema' ORDER BY 1"
        ).fetchall()
    assert 0 == second.returncode, second.stderr
    assert "up to date: the inbox is installed; nothing changed\n" == second.stdout
