"""LISTEN for the producers' wake-up hint on a dedicated session connection."""

from __future__ import annotations

import asyncio
import time
from typing import Literal, LiteralString

import psycopg

Channel = Literal["outbox_work", "events_work", "consumers_work", "outbox_urgent"]
CHANNEL: Channel = "outbox_work"  # the security outbox's producers notify here
EVENTS_CHANNEL: Channel = "events_work"  # the tenant events' (events.append_domain_event)
CONSUMERS_CHANNEL: Channel = "consumers_work"  # the consumers' (the fan-out, 0024)
URGENT_CHANNEL: Channel = "outbox_urgent"  # high priority only: the reserved slot (0049)
_LISTEN: dict[Channel, LiteralString] = {
    "outbox_work": "LISTEN outbox_work",
    "events_work": "LISTEN events_work",
    "consumers_work": "LISTEN consumers_work",
    "outbox_urgent": "LISTEN outbox_urgent",
}
# Opening the listening connection may take this long even when ``within`` is shorter, so
# that ``wait(0)`` can start listening without waiting for anything.
CONNECT_TIMEOUT = 2.0


class WorkListener:
    """Waits for a notification on ``channel``; a hint only, the table is the truth.

    The connection is opened on first use and reopened after a failure; while the database
    is unreachable ``wait`` simply sleeps, and the caller's next claim reports the outage.
    """

    def __init__(self, url: str, channel: Channel = CHANNEL) -> None:
        self._url = url
        self._channel = channel
        self._conn: psycopg.AsyncConnection | None = None

    async def wait(self, within: float) -> None:
        """Return when a notification arrives, or after ``within`` seconds.

        The first call starts listening; ``wait(0)`` does only that.
        """
        deadline = time.monotonic() + within
        try:
            async with asyncio.timeout(max(within, CONNECT_TIMEOUT)):
                conn = await self._connection()
            remaining = max(0.0, deadline - time.monotonic())
            async for _ in conn.notifies(timeout=remaining, stop_after=1):
                pass
            # Notifications that piled up while the worker was busy say the same thing.
            async for _ in conn.notifies(timeout=0):
                pass
        except (psycopg.Error, TimeoutError):
            await self.close()
            await asyncio.sleep(max(0.0, deadline - time.monotonic()))

    @property
    def listening(self) -> bool:
        """Whether the listening connection is open (it is reopened on the next wait)."""
        return self._conn is not None and not self._conn.closed

    async def close(self) -> None:
        """Close the listening connection, if open."""
        conn, self._conn = self._conn, None
        if conn is not None and not conn.closed:
            await conn.close()

    async def _connection(self) -> psycopg.AsyncConnection:
        if self._conn is None or self._conn.closed:
            conn = await psycopg.AsyncConnection.connect(self._url, autocommit=True)
            await conn.execute(_LISTEN[self._channel])
            self._conn = conn
        return self._conn
