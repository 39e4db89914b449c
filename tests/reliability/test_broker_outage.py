"""A broker outage of any length loses nothing and parks nothing (issue 29, finding 1).

A real ``outboxctl worker --lanes events`` relays to a real ``nats-server -js`` while a
producer appends tenant events to several aggregates; the broker is stopped for
``broker_outage_seconds`` (12 s here, 30 minutes in the long profile) with a retry schedule
that would spend every attempt within a second and dead-letter, parking each aggregate.
Then it comes back. Every event reaches the stream once, in each aggregate's order; no
event is dead-lettered, no aggregate parked, no attempt spent on the outage; and the
worker says at most two lines about it at info or above (when it starts, when it ends).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import nats
import pytest
from nats.js.api import AckPolicy, ConsumerConfig

from tests.events_sql import SALES, append, onboard
from tests.integration.nats.conftest import make_stream
from tests.nats_server import NatsServer
from tests.outboxctl import outboxctl_environment
from tests.reliability.profile import PROFILE
from tests.security.served import OUTBOXCTL

pytestmark = pytest.mark.integration

ACME = uuid.UUID("0190bbbb-0000-7000-8000-000000000001")
GLOBEX = uuid.UUID("0190bbbb-0000-7000-8000-000000000002")

AGGREGATES = [(organization, f"order-{n}") for organization in (ACME, GLOBEX) for n in range(4)]
STATES = "SELECT state, count(*) FROM events.outbox_records GROUP BY state ORDER BY state"
# What the worker may log about an outage at info or above: the start and the end.
OUTAGE_EVENTS = ("relay.target_suspended", "relay.target_resumed")


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[NatsServer]:
    server = NatsServer(tmp_path / "nats")
    server.start()
    yield server
    server.stop()


def _start_worker(environment: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [str(OUTBOXCTL), "worker", "--lanes", "events"],
            env=outboxctl_environment(environment),
            stdout=out,
            stderr=out,
        )


async def _stored(url: str, stream: str) -> list[tuple[str, str, str]]:
    """(organization, aggregate, event id) of every message in the stream, in stream order."""
    client = await nats.connect(url)
    try:
        # No acknowledgements: a pull consumer that waits for them stops delivering at its
        # 1,000 unacknowledged messages, and a 30-minute outage stores about 75,000.
        subscription = await client.jetstream().pull_subscribe(
            f"{stream.lower()}.>",
            stream=stream,
            config=ConsumerConfig(ack_policy=AckPolicy.NONE),
        )
        found: list[tuple[str, str, str]] = []
        while True:
            try:
                batch = await subscription.fetch(500, timeout=1)
            except nats.errors.TimeoutError:
                return found
            for message in batch:
                headers = message.headers or {}
                found.append(
                    (
                        headers["Outbox-Organization"],
                        headers["Outbox-Aggregate-Id"],
                        headers["Nats-Msg-Id"],
                    )
                )
    finally:
        await client.close()


async def test_a_broker_outage_under_load_dead_letters_and_parks_nothing(
    connect_as, database_url: str, broker: NatsServer, tmp_path: Path
) -> None:
    async with connect_as() as conn:
        await onboard(conn)
    stream = f"O{uuid.uuid4().hex[:10]}"
    await make_stream(broker.url, stream, storage="file")  # survives the restart
    log = tmp_path / "worker.log"
    worker = _start_worker(
        {
            "OUTBOX_DATABASE_URL": database_url,
            "OUTBOX_WORKER_DB_ROLE": "outbox_worker",
            "OUTBOX_DATA_DIR": str(tmp_path / "data"),
            "OUTBOX_LOG_FORMAT": "json",
            "OUTBOX_LOG_LEVEL": "info",
            "OUTBOX_EVENTS_BATCH_SIZE": "20",
            # Without the breaker, three quick failures would dead-letter every head.
            "OUTBOX_RETRY_SCHEDULE_SECONDS": "0.1",
            "OUTBOX_RETRY_MAX_ATTEMPTS": "3",
            "OUTBOX_PROVIDER_PROBE_SECONDS": "1",
            "OUTBOX_WORKER_POLL_SECONDS": "0.2",
            "OUTBOX_NATS_URL": broker.url,
            "OUTBOX_NATS_STREAM": stream,
            "OUTBOX_NATS_SUBJECT_PREFIX": stream.lower(),
            "OUTBOX_NATS_ACK_TIMEOUT_SECONDS": "1",
        },
        log,
    )
    appended: list[tuple[str, str, str]] = []
    try:
        async with connect_as(SALES) as conn:

            async def produce(seconds: float) -> None:
                ends = time.monotonic() + seconds
                n = 0
                while time.monotonic() < ends:
                    organization, aggregate = AGGREGATES[n % len(AGGREGATES)]
                    event = await append(conn, organization, aggregate, payload={"n": n})
                    appended.append((str(organization), aggregate, str(event)))
                    n += 1
                    await asyncio.sleep(0.02)

            await produce(2)
            await asyncio.to_thread(broker.stop)
            await produce(PROFILE.broker_outage_seconds)
            await asyncio.to_thread(broker.start)
            await produce(2)
        async with connect_as() as conn:
            # The backlog of a long outage drains for minutes (each aggregate one event at a
            # time): wait while it makes progress, and give up after 60 s without any.
            last, stalled_since = -1, time.monotonic()
            while time.monotonic() - stalled_since < 60:
                cursor = await conn.execute(STATES)
                states = dict(await cursor.fetchall())
                if set(states) == {"published"}:
                    break
                if states.get("published", 0) > last:
                    last, stalled_since = states.get("published", 0), time.monotonic()
                await asyncio.sleep(0.2)
            cursor = await conn.execute(
                "SELECT count(*) FROM events.publication_attempts WHERE counted"
                " AND failure_class IS NOT NULL"
            )
            spent = (await cursor.fetchone() or (0,))[0]
            cursor = await conn.execute("SELECT count(*) FROM events.dead_letters")
            parked = (await cursor.fetchone() or (0,))[0]
    finally:
        worker.terminate()
        worker.wait(timeout=60)

    stored = await _stored(broker.url, stream)
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    loud = [
        line["event"]
        for line in lines
        if line["level"] in ("info", "warning", "error")
        and line["event"].startswith(("nats.", "relay.target_", "event."))
        and line["event"] != "nats.closed"
    ]
    assert {"published": len(appended)} == states
    assert (0, 0) == (parked, spent)
    assert len(appended) == len(stored) == len({event for *_, event in stored})
    for organization, aggregate in AGGREGATES:
        key = (str(organization), aggregate)
        assert [e for o, a, e in appended if (o, a) == key] == [
            e for o, a, e in stored if (o, a) == key
        ]
    assert list(OUTAGE_EVENTS) == loud, loud
