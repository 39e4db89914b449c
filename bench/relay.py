"""The broker relay: the events lane publishing to JetStream, beside a bare nats-py publish loop.

Both publish the same number of events, with the same subjects, headers and bodies, to the
same private ``nats-server -js`` (a file-backed stream), in the same run: the bare loop is
the relay's ceiling (no database at all: ``publish_async`` of every message, then every
PubAck awaited).
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime, timedelta

import attrs
import nats

from bench.events_drain import EventsBacklog
from bench.harness import Drained, Setting, Stopwatch
from bench.worker import quiet_logging
from outbox.adapters.nats.jetstream_target import headers_for, payload_for, subject_for
from outbox.application.delivery.batch import BatchTally
from outbox.application.events.ports import ClaimedEvent
from outbox.entrypoints.bootstrap.lanes import Lane, LaneRequest, events_lane
from outbox.entrypoints.bootstrap.parts import build_process_parts
from outbox.entrypoints.settings.lanes import LaneSettings
from outbox.entrypoints.settings.tree import load_settings
from tests.nats_server import nats_binary

STREAM = "BENCH_EVENTS"
PREFIX = "bench.events"
SIZING_PREFIX = "OUTBOX_EVENTS_"


@contextmanager
def nats_server() -> Iterator[str]:
    """A private nats-server -js on a free loopback port; its URL."""
    binary = nats_binary()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    with tempfile.TemporaryDirectory() as store:
        process = subprocess.Popen(  # noqa: S603 - our own fixed argument list
            [binary, "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", store],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 10
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.02)
            yield f"nats://127.0.0.1:{port}"
        finally:
            process.terminate()
            process.wait(timeout=10)


async def _stream_messages(url: str, *, purge: bool = False) -> int:
    client = await nats.connect(url)
    try:
        jetstream = client.jetstream()
        if purge:
            await jetstream.purge_stream(STREAM)
        return int((await jetstream.stream_info(STREAM)).state.messages)
    finally:
        await client.close()


async def purge_stream(url: str) -> None:
    """Empty the bench stream, so a new consumer reads only what follows."""
    await _stream_messages(url, purge=True)


@asynccontextmanager
async def running_relay_lane(conninfo: str, url: str) -> AsyncIterator[Lane]:
    """The worker's events lane with OUTBOX_NATS_URL set (it creates the stream)."""
    quiet_logging()
    settings = load_settings(
        {
            "OUTBOX_DATABASE_URL": conninfo,
            "OUTBOX_WORKER_DB_ROLE": "outbox_worker",
            "OUTBOX_DATA_DIR": tempfile.gettempdir(),
            "OUTBOX_NATS_URL": url,
            "OUTBOX_NATS_STREAM": STREAM,
            "OUTBOX_NATS_SUBJECT_PREFIX": PREFIX,
            # The events lane's sizing (OUTBOX_EVENTS_*) may be tried from the environment.
            **{k: v for k, v in os.environ.items() if k.startswith(SIZING_PREFIX)},
        }
    )
    parts = build_process_parts(settings, seal_keys=False, process_metrics=False)
    request = LaneRequest(settings=settings, parts=parts, owner="bench", drain=True)
    async with events_lane(request) as lane:
        await lane.start_listening()
        yield lane


@attrs.frozen(kw_only=True)
class RelayDrain:
    """Times the events lane draining its backlog to JetStream (every PubAck awaited)."""

    backlog: EventsBacklog
    url: str
    sizing: LaneSettings

    def settings(self) -> dict[str, Setting]:
        """What this figure was measured with."""
        sizing = self.sizing
        return {
            "lane": "outbox.entrypoints.bootstrap.lanes.events_lane, role outbox_worker",
            "target": "adapters.nats.jetstream_target.JetStreamTarget (file stream, 1 replica)",
            "batch_size": sizing.batch_size,
            "concurrency": sizing.concurrency,
            "parallel_batches": sizing.parallel_batches,
            "max_in_flight": 256,
            **self.backlog.settings(),
        }

    async def once(self, lane: Lane, count: int | None = None) -> Drained:
        """Load the backlog, drain it to the stream, check both sides; return the timing."""
        count = await self.backlog.load(count)
        await _stream_messages(self.url, purge=True)
        loop = attrs.evolve(lane.loop, totals=BatchTally(), drain=True)
        with Stopwatch() as timing:
            totals = await loop.run()
        stored = await _stream_messages(self.url)
        if (totals.published, stored) != (count, count):
            raise RuntimeError(f"relayed {totals.published}, stored {stored} of {count}")
        await self.backlog.check(count)
        return Drained(count, timing)


def _events(count: int, organizations: int, aggregates: int) -> list[ClaimedEvent]:
    now = datetime.now(UTC)
    orgs = [uuid.uuid4() for _ in range(organizations)]
    return [
        ClaimedEvent(
            record_id=uuid.uuid4(),
            event_id=uuid.uuid4(),
            organization_id=orgs[n % organizations],
            event_type="bench.thing_happened",
            contract_version=1,
            aggregate_type="thing",
            aggregate_id=f"a-{n % aggregates}",
            append_sequence=n + 1,
            payload={"n": n},
            occurred_at=now,
            appended_at=now,
            attempts=0,
            lease_token=uuid.uuid4(),
            lease_expires_at=now + timedelta(minutes=1),
        )
        for n in range(count)
    ]


@attrs.frozen(kw_only=True)
class BarePublishLoop:
    """The ceiling: nats-py ``publish_async`` of the same events, then every PubAck."""

    url: str
    events: int
    organizations: int
    aggregates: int

    def settings(self) -> dict[str, Setting]:
        """What this figure was measured with."""
        return {
            "loop": "js.publish_async per event (same subject, headers, body), then all PubAcks",
            "max_pending": 4000,
            "events": self.events,
        }

    async def once(self, count: int | None = None) -> Drained:
        """Publish ``count`` events and await their PubAcks; return the timing."""
        count = self.events if count is None else count
        events = _events(count, self.organizations, self.aggregates)
        await _stream_messages(self.url, purge=True)
        client = await nats.connect(self.url)
        try:
            jetstream = client.jetstream()
            with Stopwatch() as timing:
                pending = [
                    await jetstream.publish_async(
                        subject_for(PREFIX, event),
                        payload_for(event),
                        stream=STREAM,
                        headers=headers_for(event),
                    )
                    for event in events
                ]
                await asyncio.gather(*pending)
        finally:
            await client.close()
        stored = await _stream_messages(self.url)
        if stored != count:
            raise RuntimeError(f"the bare loop stored {stored} of {count}")
        return Drained(count, timing)
