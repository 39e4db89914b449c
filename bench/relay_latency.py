"""End to end through the broker: append → relay → JetStream → an inbox's transaction.

A producer paced at ``rate`` events/s appends through the producer API (one transaction
each), the worker's events lane relays them to JetStream as it does in production, and an
inbox consumer (``run_inbox``) handles each one in its database transaction. Latency = when
the inbox's handler ran, inside the transaction that commits the effect and the receipt,
minus when the producer's COMMIT returned; both read this process's clock. The commit itself
is one more round trip after the handler.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
import uuid
from typing import Any

import attrs
import psycopg

from bench import events_workload
from bench.databases import Database
from bench.harness import Setting
from bench.latency import Percentiles
from bench.relay import purge_stream
from outbox.adapters.postgres.event_appender import append_domain_event
from outbox.application.delivery.batch import BatchTally
from outbox.application.events.inbox_ports import InboxEvent
from outbox.entrypoints.bootstrap.inbox import run_inbox
from outbox.entrypoints.bootstrap.lanes import Lane
from outbox.entrypoints.settings.tree import load_settings

# The inbox handles one transaction per event, in order: about 250 events/s on this machine, so
# the end-to-end figure is taken at a rate it sustains (above it, the figure is its queue).
RELAY_LATENCY_RATE = 100
SETTLE_SECONDS = 30.0
# The relay's part, from the database's own clock: appended → recorded published (PubAck).
RELAY_LAG = """
SELECT percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY lag) FROM (
    SELECT extract(epoch FROM p.published_at - e.appended_at) * 1000 AS lag
    FROM events.domain_event_publications p
    JOIN events.domain_events e ON e.id = p.domain_event_id
) AS lags
"""  # how long the last events may take to arrive before the run fails


@attrs.frozen(kw_only=True)
class RelayLatency:
    """Paced appends while the relay lane and an inbox run; their latencies."""

    database: Database
    url: str
    stream: str
    prefix: str
    rate: int
    seconds: float
    organizations: int
    aggregates: int

    def settings(self) -> dict[str, Setting]:
        """What this figure was measured with."""
        return {
            "producer": "1 connection, adapters.postgres.event_appender, 1 event per transaction",
            "rate": self.rate,
            "seconds": self.seconds,
            "inbox": "outbox.entrypoints.bootstrap.inbox.run_inbox, one process, batch 50",
            "measured": "producer COMMIT returned → the inbox handler ran (same clock)",
        }

    async def once(self, lane: Lane) -> tuple[Percentiles, Percentiles]:
        """One paced run: append → inbox handler, and append → recorded published (the
        relay's part), in milliseconds."""
        await events_workload.empty(self.database.conninfo)
        await purge_stream(self.url)
        committed: dict[str, float] = {}
        handled: dict[str, float] = {}
        everything = asyncio.Event()
        total = max(1, round(self.rate * self.seconds))

        async def handle(event: InboxEvent, _transaction: Any) -> None:
            key = event.payload.get("bench")
            if isinstance(key, str):  # an event of this run (the stream was purged first)
                handled.setdefault(key, time.time())
                if len(handled) >= total:
                    everything.set()

        stop = asyncio.Event()
        settings = load_settings(
            {
                "OUTBOX_DATABASE_URL": self.database.conninfo,
                "OUTBOX_DATA_DIR": tempfile.gettempdir(),
                "OUTBOX_NATS_URL": self.url,
                "OUTBOX_NATS_STREAM": self.stream,
                "OUTBOX_NATS_SUBJECT_PREFIX": self.prefix,
            }
        )
        # A copy of the lane's loop, with a stop of its own (the next repetition's is fresh).
        loop = attrs.evolve(
            lane.loop,
            totals=BatchTally(),
            drain=False,
            _stopping=asyncio.Event(),
            _idling=None,
        )
        relaying = asyncio.ensure_future(loop.run())
        inbox = asyncio.ensure_future(
            run_inbox(
                settings,
                handler=handle,
                consumer=f"bench-{uuid.uuid4().hex[:12]}",
                database_url=self.database.conninfo,
                role=None,  # the bench database's owner: the inbox's functions need no grant
                stop=stop,
            )
        )
        try:
            offered = await self._produce(total, committed)
            await asyncio.wait_for(everything.wait(), SETTLE_SECONDS)
        finally:
            loop.stop()
            stop.set()
            await asyncio.gather(relaying, inbox, return_exceptions=True)
        async with await psycopg.AsyncConnection.connect(self.database.conninfo) as conn:
            row = await (await conn.execute(RELAY_LAG)).fetchone()
        if row is None or row[0] is None:
            raise RuntimeError("no publication recorded for the paced events")
        p50, p95, p99 = (float(value) for value in row[0])
        latencies = [(handled[key] - at) * 1000 for key, at in committed.items()]
        quantiles = statistics.quantiles(latencies, n=100, method="inclusive")
        end_to_end = Percentiles(
            p50=statistics.median(latencies),
            p95=quantiles[94],
            p99=quantiles[98],
            messages=len(latencies),
            offered_rate=offered,
        )
        relay = Percentiles(p50=p50, p95=p95, p99=p99, messages=total, offered_rate=offered)
        return end_to_end, relay

    async def _produce(self, total: int, committed: dict[str, float]) -> float:
        """Append ``total`` events at ``rate``; record when each COMMIT returned."""
        conninfo = events_workload.producer_conninfo(self.database.conninfo)
        async with await psycopg.AsyncConnection.connect(conninfo) as conn:
            started = time.monotonic()
            for n in range(total):
                due = started + n / self.rate
                if (wait := due - time.monotonic()) > 0:
                    await asyncio.sleep(wait)
                key = f"{uuid.uuid4()}"
                aggregate = f"latency-{n % self.aggregates}"
                async with conn.transaction():
                    await append_domain_event(
                        conn,
                        organization_id=events_workload.organization(n % self.organizations),
                        event_type=events_workload.EVENT_TYPE,
                        contract_version=1,
                        aggregate_type=events_workload.AGGREGATE_TYPE,
                        aggregate_id=aggregate,
                        idempotency_key=f"latency-{key}",
                        payload={"bench": key, **events_workload.order(n, aggregate)},
                        occurred_at=events_workload.now(),
                    )
                committed[key] = time.time()
            return total / (time.monotonic() - started)
