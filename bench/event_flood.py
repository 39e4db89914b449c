"""Tenant events appended as fast as possible until SIGTERM, in a process of their own.

Run as ``python -m bench.event_flood CONNINFO APPENDERS ORGANIZATIONS AGGREGATES``: prints
``ready`` once its connections are open, appends one event per transaction on each of
``APPENDERS`` connections (acting as the bench producer role) until SIGTERM, then prints how
many it appended. Its own process, so it never delays the clock of the code producer that
the latency figure reads.
"""

from __future__ import annotations

import asyncio
import signal
import sys

import psycopg

from bench import events_workload
from bench.events_append import EventShape
from outbox.adapters.postgres.event_appender import append_domain_event

READY = "ready"


async def flood(conninfo: str, appenders: int, shape: EventShape) -> int:
    """Append until SIGTERM; return how many events were appended."""
    done = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, done.set)
    connections = [
        await psycopg.AsyncConnection.connect(
            events_workload.producer_conninfo(conninfo), autocommit=True
        )
        for _ in range(appenders)
    ]

    async def append(conn: psycopg.AsyncConnection[object], number: int) -> int:
        appended = 0
        while not done.is_set():
            n = appended * appenders + number
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
        return sum(await asyncio.gather(*(append(conn, i) for i, conn in enumerate(connections))))
    finally:
        for conn in connections:
            await conn.close()


def main(argv: list[str]) -> None:
    """Entry point: ``CONNINFO APPENDERS ORGANIZATIONS AGGREGATES``."""
    conninfo, appenders = argv[0], int(argv[1])
    shape = EventShape(organizations=int(argv[2]), aggregates=int(argv[3]))
    print(asyncio.run(flood(conninfo, appenders, shape)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
