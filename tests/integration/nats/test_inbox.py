"""The inbox against a real nats-server and PostgreSQL: one effect per event, whatever arrives."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import nats
import psycopg
import pytest

from outbox.adapters.nats.connection import NatsOptions
from outbox.adapters.nats.jetstream_target import JetStreamTarget
from outbox.application.events.inbox_ports import InboxEvent
from outbox.entrypoints.bootstrap.inbox import inbox_store, run_inbox
from outbox.entrypoints.settings.tree import load_settings
from tests.fakes.telemetry import RecordingTelemetry
from tests.integration.nats.conftest import MakeEvent, make_stream
from tests.nats_server import NatsServer
from tests.outboxctl import run_outboxctl

pytestmark = pytest.mark.integration

EFFECTS = """
CREATE TABLE public.effects (event_id uuid NOT NULL, total integer NOT NULL);
GRANT INSERT, SELECT ON public.effects TO inbox_consumer;
"""
FAST = (timedelta(milliseconds=50),)


@pytest.fixture
async def service_database(database_url: str) -> str:
    """The service's database: the migrated schema (inbox included) and an effects table."""
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        await conn.execute(EFFECTS)
    return database_url


async def _effects(database_url: str) -> list[tuple[uuid.UUID, int]]:
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        cursor = await conn.execute("SELECT event_id, total FROM public.effects ORDER BY total")
        return list(await cursor.fetchall())


async def record_effect(event: InboxEvent, transaction: Any) -> None:
    await transaction.execute(
        "INSERT INTO public.effects (event_id, total) VALUES (%s, %s)",
        (event.event_id, event.payload["total"]),
    )


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


def _settings(url: str, stream: str) -> Any:
    return load_settings(
        {
            "OUTBOX_NATS_URL": url,
            "OUTBOX_NATS_STREAM": stream,
            "OUTBOX_NATS_SUBJECT_PREFIX": stream.lower(),
        }
    )


async def _drain(
    url: str, stream: str, database_url: str, handler: Any = record_effect, **extra: Any
) -> Any:
    return await run_inbox(
        _settings(url, stream),
        handler=handler,
        consumer="shop-fulfilment",
        database_url=database_url,
        drain=True,
        backoff=FAST,
        telemetry=RecordingTelemetry(),
        **extra,
    )


async def test_each_event_has_one_effect_even_when_every_message_is_delivered_again(
    nats_server: NatsServer, stream_name: str, make_event: MakeEvent, service_database: str
) -> None:
    """A consumer that crashed before its acks sees every message again: no second effect."""
    await make_stream(nats_server.url, stream_name)
    events = [make_event(f"order-{n}") for n in range(10)]
    await _publish(nats_server.url, stream_name, events)

    first = await _drain(nats_server.url, stream_name, service_database)
    client = await nats.connect(nats_server.url)
    await client.jetstream().delete_consumer(stream_name, "shop-fulfilment")  # acks forgotten
    await client.close()
    again = await _drain(nats_server.url, stream_name, service_database)

    assert (10, 0) == (first.handled, first.duplicates)
    assert (0, 10) == (again.handled, again.duplicates)
    assert sorted((e.event_id, e.payload["total"]) for e in events) == sorted(
        await _effects(service_database)
    )


async def test_a_republish_after_the_duplicate_window_has_no_second_effect(
    nats_server: NatsServer, stream_name: str, make_event: MakeEvent, service_database: str
) -> None:
    await make_stream(nats_server.url, stream_name, duplicate_window=timedelta(milliseconds=200))
    event = make_event()
    await _publish(nats_server.url, stream_name, [event])
    await asyncio.sleep(0.4)  # past the window: JetStream stores the republish again
    await _publish(nats_server.url, stream_name, [make_event(event_id=event.event_id)])

    result = await _drain(nats_server.url, stream_name, service_database)

    assert (1, 1) == (result.handled, result.duplicates)
    assert [(event.event_id, event.payload["total"])] == await _effects(service_database)


async def test_a_poison_event_is_dead_lettered_after_the_cap_and_replayed_once_fixed(
    nats_server: NatsServer, stream_name: str, make_event: MakeEvent, service_database: str
) -> None:
    await make_stream(nats_server.url, stream_name)
    good, poison = make_event("order-1"), make_event("order-2")
    await _publish(nats_server.url, stream_name, [good, poison])
    broken = True

    async def handler(event: InboxEvent, transaction: Any) -> None:
        await record_effect(event, transaction)  # rolled back with the failure below
        if broken and event.event_id == poison.event_id:
            raise ValueError("cannot ship this order: card 4111 1111 1111 1111")

    result = await _drain(
        nats_server.url, stream_name, service_database, handler=handler, max_attempts=3
    )

    assert (1, 2, 1) == (result.handled, result.retried, result.dead_lettered)
    assert [(good.event_id, good.payload["total"])] == await _effects(service_database)
    async with inbox_store(service_database) as store:
        [dead] = await store.dead_letters("shop-fulfilment", limit=10)
        assert (poison.event_id, 3, "ValueError") == (
            dead.event_id,
            dead.attempts,
            dead.error_class,
        )
        assert b'"currency":"EUR"' in dead.data
        assert "4111" not in repr(dead)
        assert await store.request_replay("shop-fulfilment", poison.event_id)

    broken = False
    replayed = await _drain(nats_server.url, stream_name, service_database, handler=handler)

    assert 1 == replayed.replayed
    assert {good.event_id, poison.event_id} == {e for e, _ in await _effects(service_database)}
    async with inbox_store(service_database) as store:
        assert [] == list(await store.dead_letters("shop-fulfilment", limit=10))
        assert 2 == len(await store.receipts("shop-fulfilment", limit=10))


async def test_only_the_inbox_role_may_record_a_receipt(database_url: str) -> None:
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        await conn.execute("SET ROLE outbox_worker")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            await conn.execute("SELECT inbox.record_receipt('x', gen_random_uuid(), 1)")


async def test_outboxctl_inbox_lists_dead_letters_and_marks_a_replay(
    service_database: str, tmp_path: Path
) -> None:
    event_id = uuid.uuid4()
    async with inbox_store(service_database) as store:
        await store.dead_letter(
            "shop-fulfilment",
            event_id=event_id,
            subject="outbox.events.org.sales.order_placed",
            headers={"Outbox-Event-Type": "sales.order_placed"},
            data=b'{"total":1}',
            attempts=5,
            error_class="ValueError",
        )
    variables = {"OUTBOX_INBOX_DATABASE_URL": service_database, "OUTBOX_DATA_DIR": str(tmp_path)}

    listed = run_outboxctl(
        "inbox", "dead-letters", "shop-fulfilment", "--json", variables=variables
    )
    replayed = run_outboxctl(
        "inbox", "replay", "shop-fulfilment", str(event_id), variables=variables
    )
    missing = run_outboxctl(
        "inbox", "replay", "shop-fulfilment", str(uuid.uuid4()), variables=variables
    )

    assert 0 == listed.returncode, listed.stderr[-1000:]
    [item] = json.loads(listed.stdout)["items"]
    assert (str(event_id), "sales.order_placed", 5, "ValueError", None) == (
        item["eventId"],
        item["eventType"],
        item["attempts"],
        item["errorClass"],
        item["replayRequestedAt"],
    )
    assert 0 == replayed.returncode, replayed.stderr[-1000:]
    assert 5 == missing.returncode
    async with inbox_store(service_database) as store:
        [dead] = await store.dead_letters("shop-fulfilment", limit=10)
    assert dead.replay_requested_at is not None
