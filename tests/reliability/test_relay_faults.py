"""Scenario 11: the NATS JetStream relay and an inbox, through broker faults.

Producers append tenant events while ``outboxctl worker --lanes events`` processes relay them
to a private nats-server through the TCP fault proxy, and an inbox (``run_inbox``, one
consumer) receives them, its handler recording each effect in a ledger table in the
receipt's own transaction. During the run the server is restarted (same store, same port),
the relay's connections are reset and dropped, its acks are held past
``OUTBOX_NATS_ACK_TIMEOUT_SECONDS`` (the proxy stalls) and a relay process is killed with
SIGKILL and replaced. At the end: every appended event has exactly one effect, in each
aggregate's append order, every event recorded published is in the stream (a PubAck came),
and the stream holds one copy of each (the duplicate window absorbed the republishes).
"""

from __future__ import annotations

import asyncio
import random
import signal
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import nats
import psycopg
import pytest

from outbox.application.events.inbox_ports import InboxEvent
from outbox.entrypoints.bootstrap.inbox import run_inbox
from outbox.entrypoints.settings.tree import load_settings
from tests.fakes.telemetry import RecordingTelemetry
from tests.nats_server import NatsServer
from tests.reliability.event_ledger import EventLedger
from tests.reliability.event_producer import EventProducer
from tests.reliability.event_scenario import PLAIN_WORKER, EventScenario
from tests.reliability.fault_proxy import FaultProxy
from tests.reliability.profile import PROFILE
from tests.reliability.scenario import worker_env
from tests.reliability.workers import Workers

pytestmark = pytest.mark.integration

STREAM = "OUTBOX_EVENTS"
PREFIX = "outbox.events"
CONSUMER = "reliability-inbox"
ACK_TIMEOUT = 1.0
RELAY_ENV = {
    "OUTBOX_EVENTS_BATCH_SIZE": "10",
    "OUTBOX_EVENTS_CONCURRENCY": "2",
    "OUTBOX_NATS_ACK_TIMEOUT_SECONDS": str(ACK_TIMEOUT),
    "OUTBOX_RETRY_SCHEDULE_SECONDS": "0.2,0.5,1",
    "OUTBOX_RETRY_MAX_ATTEMPTS": "1000",  # an outage delays events; it never dead-letters them
}
EFFECTS = """
CREATE TABLE public.relay_effects (
    id bigserial PRIMARY KEY,
    event_id uuid NOT NULL,
    organization_id text NOT NULL,
    aggregate_id text NOT NULL,
    append_sequence bigint NOT NULL,
    attempt integer NOT NULL
);
GRANT INSERT, SELECT ON public.relay_effects TO inbox_consumer;
GRANT USAGE ON SEQUENCE public.relay_effects_id_seq TO inbox_consumer;
"""
EFFECT_ROWS = (
    "SELECT event_id, organization_id, aggregate_id, append_sequence"
    " FROM public.relay_effects ORDER BY id"
)
ATTEMPTS_PER_EVENT = """
SELECT r.domain_event_id, count(*), count(*) FILTER (WHERE a.failure_class = 'INDETERMINATE')
FROM events.publication_attempts AS a JOIN events.outbox_records AS r ON r.id = a.outbox_record_id
GROUP BY r.domain_event_id
"""
ORGANIZATIONS = 3
AGGREGATES_PER_ORGANIZATION = 6


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[NatsServer]:
    """This scenario's own nats-server (file store, so a restart keeps the stream)."""
    server = NatsServer(tmp_path / "nats")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def nats_proxy(nats_server: NatsServer) -> Iterator[FaultProxy]:
    """The fault proxy between the relay processes and the server."""
    proxy = FaultProxy(("127.0.0.1", nats_server.port))
    proxy.start()
    yield proxy
    proxy.stop()


@pytest.fixture
async def relay_scenario(
    audited_url: str, nats_proxy: FaultProxy, tmp_path: Path
) -> AsyncIterator[EventScenario]:
    """Plain ``outboxctl worker --lanes events`` processes relaying through the proxy."""
    with psycopg.connect(audited_url, autocommit=True) as conn:
        conn.execute(EFFECTS.encode())
    relay = {
        "OUTBOX_NATS_URL": f"nats://127.0.0.1:{nats_proxy.port}",
        "OUTBOX_NATS_STREAM": STREAM,
        "OUTBOX_NATS_SUBJECT_PREFIX": PREFIX,
    }
    workers = Workers(
        directory=tmp_path,
        env=worker_env(audited_url, tmp_path / "data", **relay),
        provider_env=lambda _label: {},
        command=PLAIN_WORKER,
    )
    producer = EventProducer(audited_url)
    producer.setup()
    world = EventScenario(url=audited_url, ledger=EventLedger(), producer=producer, workers=workers)
    try:
        yield world
    finally:
        nats_proxy.resume()
        await workers.stop_all(within=15)


async def record_effect(event: InboxEvent, transaction: Any) -> None:
    """The inbox handler: one effect row, in the receipt's transaction."""
    await transaction.execute(
        "INSERT INTO public.relay_effects"
        " (event_id, organization_id, aggregate_id, append_sequence, attempt)"
        " VALUES (%s, %s, %s, %s, %s)",
        (
            event.event_id,
            event.organization_id,
            event.aggregate_id,
            event.append_sequence,
            event.attempt,
        ),
    )


async def _inbox(nats_url: str, database_url: str, stop: asyncio.Event, crashes: list[str]) -> Any:
    """One inbox consumer until ``stop``; started again (same durable) if it ever fails."""
    settings = load_settings(
        {
            "OUTBOX_NATS_URL": nats_url,
            "OUTBOX_NATS_STREAM": STREAM,
            "OUTBOX_NATS_SUBJECT_PREFIX": PREFIX,
        }
    )
    while not stop.is_set():
        try:
            return await run_inbox(
                settings,
                handler=record_effect,
                consumer=CONSUMER,
                database_url=database_url,
                stop=stop,
                telemetry=RecordingTelemetry(),
            )
        except Exception as error:  # noqa: BLE001 - counted, and the consumer restarted
            frame = traceback.extract_tb(error.__traceback__)[-1]
            crashes.append(f"{type(error).__name__} at {Path(frame.filename).name}:{frame.lineno}")
            await asyncio.sleep(0.5)
    return None


async def _stream_ids(url: str) -> Counter[str]:
    """How many copies of each Nats-Msg-Id the stream holds."""
    client = await nats.connect(url)
    try:
        jetstream = client.jetstream()
        info = await jetstream.stream_info(STREAM)
        ids: Counter[str] = Counter()
        if info.state.messages:
            for sequence in range(info.state.first_seq, info.state.last_seq + 1):
                message = await jetstream.get_msg(STREAM, sequence)
                if message.headers:
                    ids[message.headers["Nats-Msg-Id"]] += 1
        return ids
    finally:
        await client.close()


async def _effects_settled(world: EventScenario, expected: int, within: float = 60) -> bool:
    """Wait until the inbox has an effect of ``expected`` events; whether it got there."""
    deadline = time.monotonic() + within
    while world.scalar("SELECT count(DISTINCT event_id) FROM public.relay_effects") < expected:
        if time.monotonic() > deadline:
            return False  # counted as lost below, after the counts are recorded
        await asyncio.sleep(0.2)
    await asyncio.sleep(1.0)  # and any late redelivery has had its chance to add an effect
    return True


async def test_relay_and_inbox_through_broker_faults_lose_nothing_and_repeat_no_effect(
    relay_scenario: EventScenario, nats_server: NatsServer, nats_proxy: FaultProxy
) -> None:
    world = relay_scenario
    rng = random.Random()
    aggregates = world.producer.aggregates(ORGANIZATIONS, AGGREGATES_PER_ORGANIZATION)
    await world.workers.start_many(2, **RELAY_ENV)
    stop = asyncio.Event()
    crashes: list[str] = []
    inbox = asyncio.create_task(_inbox(nats_server.url, world.url, stop, crashes))
    producing = asyncio.create_task(
        world.producer.append(PROFILE.relay_appends, aggregates, pause=0.05)
    )
    faults: Counter[str] = Counter()
    kinds = ["restart", "reset", "drop", "ack_delay", "kill"]
    while sum(faults.values()) < PROFILE.relay_faults:
        await asyncio.sleep(rng.uniform(0.3, 1.0))
        kind = kinds[sum(faults.values()) % len(kinds)]
        if kind == "restart":  # same store dir, same port
            await asyncio.to_thread(nats_server.stop)
            await asyncio.sleep(rng.uniform(0.2, 1.0))
            await asyncio.to_thread(nats_server.start)
        elif kind == "reset":
            nats_proxy.reset()
        elif kind == "drop":
            nats_proxy.drop()
            await asyncio.sleep(rng.uniform(0.5, 1.5))
            nats_proxy.resume()
        elif kind == "ack_delay":  # publishes reach the server; their PubAcks come too late
            nats_proxy.stall()
            await asyncio.sleep(ACK_TIMEOUT * rng.uniform(1.5, 3.0))
            nats_proxy.resume()
        else:
            victim = rng.choice(world.workers.alive())
            victim.signal(signal.SIGKILL)
            await victim.exited()
            await world.workers.start_ready(**RELAY_ENV)
        faults[kind] += 1
    await producing
    await world.settle()
    appended = [event.id for event in world.producer.acknowledged]
    settled = await _effects_settled(world, len(appended))
    stop.set()
    await asyncio.wait_for(inbox, 30)
    stream = await _stream_ids(nats_server.url)
    effects = world.rows(EFFECT_ROWS)
    attempts = world.rows(ATTEMPTS_PER_EVENT)
    published = {
        row[0] for row in world.rows("SELECT domain_event_id FROM events.domain_event_publications")
    }

    per_event = Counter(row[0] for row in effects)
    lost = [e for e in appended if per_event[e] == 0]
    duplicates = sum(count - 1 for count in per_event.values() if count > 1)
    order_violations = 0
    last: dict[tuple[str, str], int] = defaultdict(int)
    for _, organization, aggregate, sequence in effects:
        if sequence <= last[(organization, aggregate)]:
            order_violations += 1
        last[(organization, aggregate)] = max(last[(organization, aggregate)], sequence)
    without_puback = [e for e in published if str(e) not in stream]
    republished = {row[0] for row in attempts if row[1] > 1}
    ack_timeouts = sum(row[2] for row in attempts)
    stream_copies = sum(stream.values()) - len(stream)
    verdict = await world.finish(
        "11 relay: NATS restarts, drops, late acks, relay SIGKILL",
        faults=dict(faults),
        inbox_effects=len(effects),
        inbox_lost=len(lost),
        inbox_duplicate_effects=duplicates,
        inbox_order_violations=order_violations,
        inbox_settled=settled,
        inbox_restarts=len(crashes),
        inbox_crashes=sorted(set(crashes)),
        published_without_puback=len(without_puback),
        republished_events=len(republished),
        ack_timeouts=ack_timeouts,
        republishes_absorbed=len(republished & {UUID(i) for i in stream}) - stream_copies,
        stream_extra_copies=stream_copies,
        relay_processes=len(world.workers.started),
    )

    assert PROFILE.relay_appends == verdict.appended == verdict.published
    assert [] == lost, crashes[:10]
    assert 0 == duplicates
    assert 0 == order_violations
    assert [] == without_puback
    assert 0 == stream_copies  # the duplicate window absorbed every republish
    assert set(map(str, appended)) == set(stream)
    assert faults["restart"] >= 1
    assert faults["kill"] >= 1
