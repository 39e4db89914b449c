"""The inbox tables of a consuming service's database, over the ``inbox.*`` functions (0025).

The handler's transaction is a pooled connection inside ``conn.transaction()``: the receipt
is recorded first, the handler writes through the same AsyncConnection, and the block's end
commits both (or, when the handler raises, neither).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any
from uuid import UUID

from psycopg import AsyncConnection
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.error_translation import translated_errors
from outbox.application.events.inbox_ports import (
    InboxDeadLetter,
    InboxEvent,
    InboxHandle,
    InboxReceipt,
)

RECORD_RECEIPT = "SELECT inbox.record_receipt(%s, %s, %s)"
RECORD_DEAD_LETTER = "SELECT inbox.record_dead_letter(%s, %s, %s, %s, %s, %s, %s)"
TAKE_REPLAY = """
SELECT event_id, subject, headers, payload, attempts, error_class, dead_lettered_at
FROM inbox.take_replay(%s)
"""
LIST_DEAD_LETTERS = """
SELECT event_id, subject, headers, payload, attempts, error_class, dead_lettered_at,
       replay_requested_at
FROM inbox.list_dead_letters(%s, %s)
"""
LIST_RECEIVED = "SELECT event_id, stream_sequence, received_at FROM inbox.list_received(%s, %s)"
REQUEST_REPLAY = "SELECT inbox.request_replay(%s, %s)"


class PostgresInboxStore:
    """InboxStore over a pool of connections acting as ``inbox_consumer``."""

    def __init__(self, pool: AsyncConnectionPool[AsyncConnection]) -> None:
        self._pool = pool

    async def handle_once(self, consumer: str, event: InboxEvent, handle: InboxHandle) -> bool:
        """Receipt and effect in one transaction; False (nothing run) for a known event."""
        with translated_errors():
            async with self._pool.connection() as conn, conn.transaction():
                cursor = await conn.execute(
                    RECORD_RECEIPT, (consumer, event.event_id, event.stream_sequence)
                )
                row = await cursor.fetchone()
                if row is None or not row[0]:
                    return False
                await handle(event, conn)
                return True

    async def dead_letter(
        self,
        consumer: str,
        *,
        event_id: UUID,
        subject: str,
        headers: Mapping[str, str],
        data: bytes,
        attempts: int,
        error_class: str,
    ) -> None:
        """Keep (or update) the dead letter."""
        with translated_errors():
            async with self._pool.connection() as conn:
                await conn.execute(
                    RECORD_DEAD_LETTER,
                    (
                        consumer,
                        event_id,
                        subject[:1000],
                        Jsonb(dict(headers)),
                        data,
                        max(1, attempts),
                        error_class[:200],
                    ),
                )

    async def replay_one(
        self, consumer: str, handle: Callable[[InboxDeadLetter, Any], Awaitable[None]]
    ) -> InboxDeadLetter | None:
        """One marked dead letter: removed, its receipt recorded and handled, in one commit."""
        with translated_errors():
            async with self._pool.connection() as conn, conn.transaction():
                cursor = await conn.execute(TAKE_REPLAY, (consumer,))
                row = await cursor.fetchone()
                if row is None:
                    return None
                event_id, subject, headers, data, attempts, error_class, dead_lettered_at = row
                taken = InboxDeadLetter(
                    event_id=event_id,
                    subject=subject,
                    headers=headers,
                    data=bytes(data),
                    attempts=attempts,
                    error_class=error_class,
                    dead_lettered_at=dead_lettered_at,
                    replay_requested_at=None,
                )
                cursor = await conn.execute(RECORD_RECEIPT, (consumer, event_id, 0))
                first = await cursor.fetchone()
                if first is not None and first[0]:  # handled meanwhile: only remove it
                    await handle(taken, conn)
                return taken

    async def dead_letters(self, consumer: str, *, limit: int) -> Sequence[InboxDeadLetter]:
        """Oldest first."""
        with translated_errors():
            async with self._pool.connection() as conn:
                cursor = await conn.execute(LIST_DEAD_LETTERS, (consumer, limit))
                return [
                    InboxDeadLetter(
                        event_id=row[0],
                        subject=row[1],
                        headers=row[2],
                        data=bytes(row[3]),
                        attempts=row[4],
                        error_class=row[5],
                        dead_lettered_at=row[6],
                        replay_requested_at=row[7],
                    )
                    for row in await cursor.fetchall()
                ]

    async def receipts(self, consumer: str, *, limit: int) -> Sequence[InboxReceipt]:
        """Newest first."""
        with translated_errors():
            async with self._pool.connection() as conn:
                cursor = await conn.execute(LIST_RECEIVED, (consumer, limit))
                return [
                    InboxReceipt(event_id=row[0], stream_sequence=row[1], received_at=row[2])
                    for row in await cursor.fetchall()
                ]

    async def request_replay(self, consumer: str, event_id: UUID) -> bool:
        """Mark it; False when there is no such dead letter."""
        with translated_errors():
            async with self._pool.connection() as conn:
                cursor = await conn.execute(REQUEST_REPLAY, (consumer, event_id))
                row = await cursor.fetchone()
                return bool(row and row[0])
