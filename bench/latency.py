"""Enqueue-to-provider latency at a steady rate, with the worker in its own process."""

from __future__ import annotations

import asyncio
import json
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, LiteralString

import attrs
import psycopg

from bench import events_workload, workload
from bench.databases import Database
from bench.enqueue import sealed_message
from bench.event_flood import READY as FLOOD_READY
from bench.events_append import EventShape
from bench.harness import Setting
from bench.worker import WorkerConfig
from bench.worker_process import (
    EVENTS,
    SLOT_ELSEWHERE,
    URGENT_ONLY,
    start_serving,
    until_ready,
)
from outbox.adapters.crypto.envelope import EnvelopeSealer
from outbox.adapters.crypto.keyring import parse_keyring
from outbox.adapters.postgres.outbox_writer import PostgresOutboxWriter
from outbox.adapters.system.clock import SystemClock
from outbox.adapters.system.ids import Uuid7Ids
from outbox.domain.delivery.priorities import Priority

LIVE = "SELECT count(*) FROM outbox.messages WHERE state IN ('pending', 'leased')"
FLOOD_LEFT = (
    "SELECT count(*) FROM outbox.messages"
    " WHERE purpose = 'notification' AND state IN ('pending', 'leased')"
)
EVENTS_LEFT = "SELECT count(*) FROM events.outbox_records WHERE state IN ('pending', 'leased')"
SETTLE_TIMEOUT = 60.0
PRODUCER_CONNECTIONS = 8


@attrs.frozen(kw_only=True)
class Percentiles:
    """One repetition's latencies in milliseconds."""

    p50: float
    p95: float
    p99: float
    messages: int
    offered_rate: float
    flood_left: int = 0  # notifications still queued when the last code was committed
    events_left: int = 0  # tenant events still queued when the last code was committed
    events_appended: int = 0  # tenant events appended while the codes were enqueued


@attrs.frozen(kw_only=True)
class SteadyLatency:
    """One producer paced at ``rate`` messages/s for ``seconds``; the worker runs meanwhile.

    Latency = when the no-op provider got the message (worker process clock) minus when the
    producer's COMMIT returned (this process); both read the same system clock. The row is
    visible from the moment the commit is flushed, a little before the producer hears of it,
    so a worker with a process to itself can send a code in between: a latency at or below
    zero is a true reading.

    With ``flood``, that many notifications are queued (due, normal priority) before the
    worker starts, so it drains them all the while the codes arrive: the codes' latency
    under a notification flood. Only the codes are measured.

    The worker process runs the events lane beside the security lane, as ``outboxctl worker``
    does by default. With ``events_flood``, that many tenant events are queued before it
    starts and ``event_appenders`` producer connections append more, as fast as they can,
    the whole time the codes are enqueued: the codes' latency while the events lane is
    saturated. With ``event_rate`` too, the appenders take turns at that many events a
    second instead (a steady events load beside the codes, not a flood).
    """

    database: Database
    keyring: str = attrs.field(repr=False)
    rate: int
    seconds: float
    config: WorkerConfig
    flood: int = 0
    # The codes' priority; None keeps the purpose's (high). NORMAL puts them in line with
    # the flood, as a queue without priorities would: the comparison that shows what they buy.
    code_priority: Priority | None = None
    events_flood: int = 0
    event_appenders: int = 0
    event_shape: EventShape = attrs.field(
        factory=lambda: EventShape(organizations=10, aggregates=5_000)
    )
    event_rate: float = 0  # events/s over the appenders; 0: as fast as they can
    # As ``outboxctl worker --lane-processes`` runs them: the events lane, the security lane's
    # batches and its reserved slot each in a worker process of its own, instead of all three
    # on one event loop.
    lanes_apart: bool = False

    def settings(self) -> dict[str, Setting]:
        """What this figure was measured with."""
        return {
            "rate_per_second": self.rate,
            "seconds": self.seconds,
            "producer": (
                f"one paced process, {PRODUCER_CONNECTIONS} connections taking turns, "
                "one sealed sign_up code per transaction"
            ),
            "worker": (
                "three processes (--lane-processes): the security lane's batches, its reserved"
                " slot alone, the events lane (outbox.entrypoints.bootstrap.lanes.events_lane)"
                if self.lanes_apart
                else "separate process, WorkerLoop with LISTEN wake-up and the reserved slot,"
                " and the events lane (outbox.entrypoints.bootstrap.lanes.events_lane) in the"
                " same process"
            ),
            "events_flood": (
                f"{self.events_flood} tenant events queued before the worker starts, then "
                f"{self.event_appenders} connections appending "
                + (f"{self.event_rate:g} a second" if self.event_rate else "continuously")
                + f" over {self.event_shape.organizations} organizations"
                if self.events_flood or self.event_appenders
                else "none"
            ),
            "flood": (
                f"{self.flood} notifications queued before the worker starts"
                if self.flood
                else "none"
            ),
            "code_priority": (
                "the purpose's (high)"
                if self.code_priority is None
                else f"{self.code_priority.name.lower()}, as the flood"
            ),
            **self.config.settings(),
        }

    async def prepare(self) -> None:
        """Register the bench events module and its producer role (the events flood's)."""
        await events_workload.onboard(self.database.conninfo)

    async def once(self) -> Percentiles:
        """Run the worker and the paced producer; return this repetition's percentiles."""
        await workload.empty(self.database.conninfo)
        await events_workload.empty(self.database.conninfo)
        if self.flood:
            await workload.bulk_load(self.database.conninfo, self.flood)
        if self.events_flood:
            await events_workload.bulk_load(
                self.database.conninfo,
                self.events_flood,
                organizations=self.event_shape.organizations,
                aggregates=self.event_shape.aggregates,
            )
        with tempfile.TemporaryDirectory(prefix="outbox-bench-") as scratch:
            outs = [Path(scratch) / "received.json"]
            helpers: list[asyncio.subprocess.Process] = []
            if self.lanes_apart:
                outs.append(Path(scratch) / "received-by-the-slot.json")
                helpers = [
                    await self._start_events_process(),
                    await self._start_worker(outs[1], URGENT_ONLY),
                ]
            worker = await self._start_worker(
                outs[0],
                *((SLOT_ELSEWHERE,) if self.lanes_apart else (EVENTS,)),
                *self.config.process_flags(),
            )
            try:
                committed, offered, appended = await self._produce()
                flood_left = await self._count(FLOOD_LEFT)
                events_left = await self._count(EVENTS_LEFT)
                await self._settle()
            finally:
                for process in (worker, *helpers):
                    if process.returncode is None:
                        process.send_signal(signal.SIGTERM)
                for process in (worker, *helpers):
                    await process.wait()
            received: dict[str, float] = {}
            for out in outs:
                received.update(json.loads(out.read_text()))
        latencies = sorted(
            (received[key] - at) * 1000 for key, at in committed.items() if key in received
        )
        if len(latencies) != len(committed):
            raise RuntimeError(
                f"{len(committed) - len(latencies)} messages never reached the provider"
            )
        cuts = statistics.quantiles(latencies, n=100, method="inclusive")
        return Percentiles(
            p50=cuts[49],
            p95=cuts[94],
            p99=cuts[98],
            messages=len(latencies),
            offered_rate=offered,
            flood_left=flood_left,
            events_left=events_left,
            events_appended=appended,
        )

    async def _produce(self) -> tuple[dict[str, float], float, int]:
        """Start message n at ``n / rate`` seconds on a free connection; return when each one's
        COMMIT returned, the rate achieved and how many tenant events the appenders added
        meanwhile.

        One message per transaction: a single connection cannot commit 500 times a second
        when each commit waits for its WAL flush, so ``PRODUCER_CONNECTIONS`` connections
        take turns, and the schedule (not the connections) sets the rate.
        """
        sealer = EnvelopeSealer(parse_keyring(self.keyring))
        ids = Uuid7Ids()
        clock = SystemClock()
        count = round(self.rate * self.seconds)
        committed: dict[str, float] = {}
        idle: asyncio.Queue[psycopg.AsyncConnection[Any]] = asyncio.Queue()
        for _ in range(PRODUCER_CONNECTIONS):
            idle.put_nowait(
                await psycopg.AsyncConnection.connect(self.database.conninfo, autocommit=True)
            )

        async def enqueue(n: int) -> None:
            conn = await idle.get()
            try:
                message = sealed_message(n, sealer, ids, clock)
                if self.code_priority is not None:
                    message = attrs.evolve(message, priority=self.code_priority)
                async with conn.transaction():
                    await PostgresOutboxWriter(conn).enqueue(message)
                committed[str(message.id)] = time.time()
            finally:
                idle.put_nowait(conn)

        sends: list[asyncio.Task[None]] = []
        flood = await self._start_event_flood()
        try:
            started = time.perf_counter()
            for n in range(count):
                delay = started + n / self.rate - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                sends.append(asyncio.create_task(enqueue(n)))
            await asyncio.gather(*sends)
            elapsed = time.perf_counter() - started
        finally:
            appended = await self._stop_event_flood(flood)
            for task in sends:
                task.cancel()
            await asyncio.gather(*sends, return_exceptions=True)
            while not idle.empty():
                await idle.get_nowait().close()
        return committed, count / elapsed, appended

    async def _start_worker(self, out: Path, *flags: str) -> asyncio.subprocess.Process:
        """``bench.worker_process serve`` with ``flags``, ready; it writes ``out`` at the end."""
        return await start_serving(self.database.conninfo, out, self.config, self.keyring, *flags)

    async def _start_events_process(self) -> asyncio.subprocess.Process:
        """The events lane in a worker process of its own, listening."""
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.worker_process",
            "events",
            self.database.conninfo,
            stdout=asyncio.subprocess.PIPE,
        )
        await until_ready(process, "the events lane's process")
        return process

    async def _start_event_flood(self) -> asyncio.subprocess.Process | None:
        """The appenders' own process, ready to append (None without appenders)."""
        if not self.event_appenders:
            return None
        flood = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.event_flood",
            self.database.conninfo,
            str(self.event_appenders),
            str(self.event_shape.organizations),
            str(self.event_shape.aggregates),
            str(self.event_rate),
            stdout=asyncio.subprocess.PIPE,
        )
        assert flood.stdout is not None
        line = await asyncio.wait_for(flood.stdout.readline(), 60)
        if line.decode().strip() != FLOOD_READY:
            raise RuntimeError("the event flood process did not start")
        return flood

    async def _stop_event_flood(self, flood: asyncio.subprocess.Process | None) -> int:
        """Stop the appenders; return how many events they appended."""
        if flood is None:
            return 0
        if flood.returncode is None:
            flood.send_signal(signal.SIGTERM)
        out, _ = await flood.communicate()
        if flood.returncode != 0:
            raise RuntimeError("the event flood process failed")
        return int(out.decode().split()[-1])

    async def _count(self, query: LiteralString) -> int:
        async with await psycopg.AsyncConnection.connect(
            self.database.conninfo, autocommit=True
        ) as conn:
            row = await (await conn.execute(query)).fetchone()
        return int(row[0]) if row is not None else 0

    async def _settle(self) -> None:
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while time.monotonic() < deadline:
            if await self._count(LIVE) == 0:
                return
            await asyncio.sleep(0.05)
        raise RuntimeError("the worker did not publish every message in time")
