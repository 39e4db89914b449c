"""Tenant events appended until SIGTERM, in a process of their own: as fast as possible, or
paced at a steady rate.

Run as ``python -m bench.event_flood CONNINFO APPENDERS ORGANIZATIONS AGGREGATES [RATE]``:
prints ``ready`` once its connections are open, appends one event per transaction on
``APPENDERS`` connections (acting as the bench producer role) until SIGTERM, then prints how
many it appended. Without ``RATE`` (or with 0) each connection appends as fast as it can;
with it, event n starts ``n / RATE`` seconds after the first on whichever connection is free,
so the connections take turns and the schedule sets the rate. Its own process, so it never
delays the clock of the code producer that the latency figure reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import signal
import sys
import time

import psycopg

from bench import events_workload
from bench.events_append import EventShape
from outbox.adapters.postgres.event_appender import append_domain_event

READY = "ready"


async def _due(n: int, *, rate: float, started: float, done: asyncio.Event) -> bool:
    """Wait until event n is due (at once without a rate); False once stopped instead."""
    if rate > 0:
        delay = started + n / rate - time.perf_counter()
        if delay > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), delay)
    return not done.is_set()


async def flood(conninfo: str, appenders: int, shape: EventShape, rate: float = 0) -> int:
    """Append until SIGTERM (``rate`` a second, or as fast as possible when 0); return how
    many events were appended."""
    done = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, done.set)
    connections = [
        await psycopg.AsyncConnection.connect(
            events_workload.producer_conninfo(conninfo), autocommit=True
        )
        for _ in range(appenders)
    ]
    numbers = itertools.count()
    started = time.perf_counter()

    async def append(conn: psycopg.AsyncConnection[object]) -> int:
        appended = 0
        while await _due(n := next(numbers), rate=rate, started=started, done=done):
            organization, aggregate = shape.of(n)
            async with conn.transaction():
                await append_domain_event(
                    conn,  # type: ignore[arg-type]
                    organization_id=organization,
                    event_type=events_workload.EVENT_TYPE,
                    contract_version=1,
                    aggregate_type=events_workload.AGGREGATE_TYPE,
                    aggregate_id=aggregate,
                    idempotency_key=f"flood-{n}",
                    payload=events_workload.order(n, aggregate),
                    occurred_at=events_workload.now(),
                )
            appended += 1
        return appended

    try:
        print(READY, flush=True)
        return sum(await asyncio.gather(*(append(conn) for conn in connections)))
    finally:
        for conn in connections:
            await conn.close()


def main(argv: list[str]) -> None:
    """Entry point: ``CONNINFO APPENDERS ORGANIZATIONS AGGREGATES [RATE]``."""
    conninfo, appenders = argv[0], int(argv[1])
    shape = EventShape(organizations=int(argv[2]), aggregates=int(argv[3]))
    rate = float(argv[4]) if len(argv) > 4 else 0.0
    print(asyncio.run(flood(conninfo, appenders, shape, rate)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
