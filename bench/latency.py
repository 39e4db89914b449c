"""Enqueue-to-provider latency at a steady rate, with the worker in its own process."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

import attrs
import psycopg

from adapters.crypto.envelope import EnvelopeSealer
from adapters.crypto.keyring import parse_keyring
from adapters.postgres.outbox_writer import PostgresOutboxWriter
from adapters.system.clock import SystemClock
from adapters.system.ids import Uuid7Ids
from bench import workload
from bench.databases import Database
from bench.enqueue import sealed_message
from bench.harness import Setting
from bench.worker import WorkerConfig
from bench.worker_process import KEYRING_VARIABLE, READY

LIVE = "SELECT count(*) FROM outbox.messages WHERE state IN ('pending', 'leased')"
SETTLE_TIMEOUT = 60.0


@attrs.frozen(kw_only=True)
class Percentiles:
    """One repetition's latencies in milliseconds."""

    p50: float
    p95: float
    p99: float
    messages: int
    offered_rate: float


@attrs.frozen(kw_only=True)
class SteadyLatency:
    """One producer paced at ``rate`` messages/s for ``seconds``; the worker runs meanwhile.

    Latency = when the no-op provider got the message (worker process clock) minus when the
    producer's COMMIT returned (this process); both read the same system clock.
    """

    database: Database
    keyring: str = attrs.field(repr=False)
    rate: int
    seconds: float
    config: WorkerConfig

    def settings(self) -> dict[str, Setting]:
        """What this figure was measured with."""
        return {
            "rate_per_second": self.rate,
            "seconds": self.seconds,
            "producer": "one task, one connection, one sealed sign_up code per transaction",
            "worker": "separate process, WorkerLoop with LISTEN wake-up",
            **self.config.settings(),
        }

    async def once(self) -> Percentiles:
        """Run the worker and the paced producer; return this repetition's percentiles."""
        await workload.empty(self.database.conninfo)
        with tempfile.TemporaryDirectory(prefix="outbox-bench-") as scratch:
            out = Path(scratch) / "received.json"
            worker = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "bench.worker_process",
                "serve",
                self.database.conninfo,
                str(out),
                str(self.config.batch_size),
                str(self.config.concurrency),
                str(self.config.lanes),
                stdout=asyncio.subprocess.PIPE,
                env={**os.environ, KEYRING_VARIABLE: self.keyring},
            )
            try:
                assert worker.stdout is not None
                line = await asyncio.wait_for(worker.stdout.readline(), 60)
                if line.decode().strip() != READY:
                    raise RuntimeError("the worker process did not start")
                committed, offered = await self._produce()
                await self._settle()
            finally:
                if worker.returncode is None:
                    worker.send_signal(signal.SIGTERM)
                await worker.wait()
            received = json.loads(out.read_text())
        latencies = sorted(
            (received[key] - at) * 1000 for key, at in committed.items() if key in received
        )
        if len(latencies) != len(committed):
            raise RuntimeError(
                f"{len(committed) - len(latencies)} messages never reached the provider"
            )
        cuts = statistics.quantiles(latencies, n=100, method="inclusive")
        return Percentiles(
            p50=cuts[49], p95=cuts[94], p99=cuts[98], messages=len(latencies), offered_rate=offered
        )

    async def _produce(self) -> tuple[dict[str, float], float]:
        sealer = EnvelopeSealer(parse_keyring(self.keyring))
        ids = Uuid7Ids()
        clock = SystemClock()
        count = round(self.rate * self.seconds)
        committed: dict[str, float] = {}
        async with await psycopg.AsyncConnection.connect(
            self.database.conninfo, autocommit=True
        ) as conn:
            writer = PostgresOutboxWriter(conn)
            started = time.perf_counter()
            for n in range(count):
                delay = started + n / self.rate - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                message = sealed_message(n, sealer, ids, clock)
                async with conn.transaction():
                    await writer.enqueue(message)
                committed[str(message.id)] = time.time()
            elapsed = time.perf_counter() - started
        return committed, count / elapsed

    async def _settle(self) -> None:
        deadline = time.monotonic() + SETTLE_TIMEOUT
        async with await psycopg.AsyncConnection.connect(
            self.database.conninfo, autocommit=True
        ) as conn:
            while time.monotonic() < deadline:
                row = await (await conn.execute(LIVE)).fetchone()
                if row is not None and row[0] == 0:
                    return
                await asyncio.sleep(0.05)
        raise RuntimeError("the worker did not publish every message in time")
