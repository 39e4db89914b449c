"""Concurrent producers, each on its own connection, committing one message per transaction."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable

import psycopg

from bench.harness import rate

Transaction = Callable[[psycopg.AsyncConnection[object], int], Awaitable[None]]


async def transactions_per_second(
    conninfo: str, *, total: int, concurrency: int, transaction: Transaction
) -> float:
    """Run ``total`` transactions shared among ``concurrency`` connections; return their rate.

    ``transaction(conn, n)`` does the whole transaction for the n-th message (it opens and
    commits it). Connections are opened before the clock starts and closed after it stops.
    """
    connections = [
        await psycopg.AsyncConnection.connect(conninfo, autocommit=True) for _ in range(concurrency)
    ]
    numbers = itertools.count()

    async def produce(conn: psycopg.AsyncConnection[object]) -> None:
        while (n := next(numbers)) < total:
            await transaction(conn, n)

    try:
        started = time.perf_counter()
        await asyncio.gather(*(produce(conn) for conn in connections))
        elapsed = time.perf_counter() - started
    finally:
        for conn in connections:
            await conn.close()
    return rate(total, elapsed)
