"""MessageLog over the database operator's SQL functions (0016_operator_search_and_attempt_details).

The functions mask destinations and refuse any connection that is not the database operator;
this adapter maps rows to views.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, LiteralString
from uuid import UUID

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.operator_store import operator_errors
from outbox.adapters.postgres.views import read_views
from outbox.application.delivery.message_filters import MessageFilter
from outbox.application.delivery.views import AttemptView, MessageSummary, Repair, RepairAction
from outbox.domain.channels import Channel
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import State
from outbox.domain.purposes import Purpose

FIND_MESSAGES = """
SELECT id, purpose, channel, destination, state, attempt_count, created_at, dead_letter_reason,
       provider, repair_action, repair_message_id, repaired_at
FROM outbox.find_messages(
    %s::text, %s::text, %s::text, %s::text, %s::timestamptz, %s::timestamptz, %s::uuid,
    %s::text, %s::uuid, %s::uuid, %s::integer
)
"""
REPAIRS = """
SELECT message_id, action, new_message_id, occurred_at
FROM outbox.dead_letter_repairs(%s::uuid[])
"""
HISTORY = """
SELECT attempt, counted, outcome, failure_class, code, provider, provider_message_id,
       recorded_at, retry_at, detail
FROM outbox.message_history(%s::uuid)
"""

Row = tuple[Any, ...]


def message_summary(row: Row) -> MessageSummary:
    """One row of the find_messages columns as a summary."""
    action, copy_id, repaired_at = row[9:12]
    return MessageSummary(
        id=row[0],
        purpose=Purpose(row[1]),
        channel=Channel(row[2]),
        destination=row[3],
        state=State(row[4]),
        attempts=row[5],
        created_at=row[6],
        dead_letter_reason=FailureClass(row[7]) if row[7] else None,
        provider=row[8] or "",
        repair=None
        if action is None
        else Repair(action=RepairAction(action), message_id=copy_id, at=repaired_at),
    )


class PostgresMessageLog:
    """MessageLog on the database operator's pool; each call is its own transaction."""

    def __init__(self, pool: AsyncConnectionPool[AsyncConnection]) -> None:
        self._pool = pool

    async def messages(
        self, *, where: MessageFilter, after: UUID | None, before: UUID | None, limit: int
    ) -> Sequence[MessageSummary]:
        """Up to ``limit`` matching messages, newest first, on one side of the cursor."""
        params = (
            where.state.value if where.state else None,
            where.purpose.value if where.purpose else None,
            where.reason.value if where.reason else None,
            where.provider,
            where.since,
            where.until,
            where.message_id,
            where.destination_digest,
            after,
            before,
            limit,
        )
        return [message_summary(row) for row in await self._all(FIND_MESSAGES, params)]

    async def repairs(self, dead_letter_ids: Sequence[UUID]) -> Mapping[UUID, Repair]:
        """The newest reissue or requeue of each dead letter that had one."""
        rows = await self._all(REPAIRS, (list(dead_letter_ids),))
        return {
            dead_id: Repair(action=RepairAction(action), message_id=copy_id, at=at)
            for dead_id, action, copy_id, at in rows
        }

    async def history(self, message_id: UUID) -> Sequence[AttemptView]:
        """The message's attempts, oldest first, with each provider's detail."""
        with operator_errors():
            return await read_views(self._pool, AttemptView, HISTORY, (message_id,))

    async def _all(self, query: LiteralString, params: tuple[Any, ...]) -> list[Row]:
        with operator_errors():
            async with self._pool.connection() as conn:
                cursor = await conn.execute(query, params)
                return await cursor.fetchall()
