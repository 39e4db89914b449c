"""The notifications catalogue in PostgreSQL (0027/0028): snapshots taken in the
caller's transaction, consent, and an intent's snapshots for the operator.

Every call needs a role that is a member of notifications_producer (identity_service is), or
the database operator's login; another role is refused with PermissionDenied.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from psycopg import AsyncConnection
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.error_translation import translated_errors
from outbox.application.notifications.ports import NotificationView, OptOut, TakenSnapshot
from outbox.domain.channels import Channel
from outbox.domain.notifications.snapshots import (
    Decision,
    Intent,
    IntentSource,
    PlannedDelivery,
    Snapshot,
)

TAKE_SNAPSHOT = """
SELECT snapshot_id, intent_id, decision, created FROM notifications.take_snapshot(
    p_intent_id => %s::uuid,
    p_intent_key => %s::text,
    p_category => %s::text,
    p_recipient_id => %s::uuid,
    p_source => %s::text,
    p_snapshot_id => %s::uuid,
    p_channel => %s::text,
    p_destination => %s::text,
    p_masked_destination => %s::text,
    p_template => %s::text,
    p_locale => %s::text,
    p_variables => %s::jsonb
)
"""
OPT_OUT = "SELECT notifications.opt_out(%s::uuid, %s::text, %s::text[])"
OPT_IN = "SELECT notifications.opt_in(%s::uuid, %s::text, %s::text[])"
OPT_OUTS = "SELECT category_code, channel, opted_out_at FROM notifications.opt_outs(%s::uuid)"
INTENT_SNAPSHOTS = """
SELECT snapshot_id, intent_id, intent_key, category_code, recipient_id, source, channel,
       masked_destination, template, locale, variables, decision, created_at, message_state
FROM notifications.intent_snapshots(%s::uuid)
"""


class PostgresNotificationStore:
    """NotificationStore on one connection; its calls join the transaction open there."""

    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn

    async def take_snapshot(
        self, intent: Intent, planned: PlannedDelivery, *, intent_id: UUID
    ) -> TakenSnapshot:
        """Take the snapshot (and enqueue its message) through notifications.take_snapshot."""
        with translated_errors():
            cursor = await self._conn.execute(
                TAKE_SNAPSHOT,
                (
                    intent_id,
                    intent.key,
                    intent.category,
                    intent.recipient_id,
                    intent.source.value,
                    planned.snapshot_id,
                    planned.channel.value,
                    planned.destination,
                    planned.masked_destination,
                    planned.template,
                    planned.locale,
                    Jsonb(dict(planned.variables)),
                ),
            )
            row = await cursor.fetchone()
        assert row is not None  # noqa: S101 - the function always answers one row
        return TakenSnapshot(
            snapshot_id=row[0],
            intent_id=row[1],
            channel=planned.channel,
            decision=Decision(row[2]),
            created=row[3],
        )


def _channels(channels: Sequence[Channel]) -> list[str]:
    return [channel.value for channel in channels]


class PostgresConsent:
    """ConsentStore over a pool, one transaction per call."""

    def __init__(self, pool: AsyncConnectionPool[AsyncConnection]) -> None:
        self._pool = pool

    async def _one(self, query: Any, params: tuple[object, ...]) -> Any:
        with translated_errors():
            async with self._pool.connection() as conn:
                cursor = await conn.execute(query, params)
                row = await cursor.fetchone()
        return None if row is None else row[0]

    async def opt_out(self, recipient_id: UUID, category: str, channels: Sequence[Channel]) -> int:
        """Opt out; how many opt-outs were new."""
        return int(await self._one(OPT_OUT, (recipient_id, category, _channels(channels))))

    async def opt_in(self, recipient_id: UUID, category: str, channels: Sequence[Channel]) -> int:
        """Lift opt-outs; how many there were."""
        return int(await self._one(OPT_IN, (recipient_id, category, _channels(channels))))

    async def opt_outs(self, recipient_id: UUID) -> Sequence[OptOut]:
        """The recipient's opt-outs."""
        with translated_errors():
            async with self._pool.connection() as conn:
                cursor = await conn.execute(OPT_OUTS, (recipient_id,))
                rows = await cursor.fetchall()
        return [
            OptOut(
                recipient_id=recipient_id, category=r[0], channel=Channel(r[1]), opted_out_at=r[2]
            )
            for r in rows
        ]


class PostgresNotificationReader:
    """NotificationReader over a pool."""

    def __init__(self, pool: AsyncConnectionPool[AsyncConnection]) -> None:
        self._pool = pool

    async def find(self, some_id: UUID) -> NotificationView | None:
        """The intent's snapshots and their messages' states, or None."""
        with translated_errors():
            async with self._pool.connection() as conn:
                cursor = await conn.execute(INTENT_SNAPSHOTS, (some_id,))
                rows = await cursor.fetchall()
        if not rows:
            return None
        return NotificationView(
            snapshots=tuple(
                Snapshot(
                    id=r[0],
                    intent_id=r[1],
                    intent_key=r[2],
                    category=r[3],
                    recipient_id=r[4],
                    source=IntentSource(r[5]),
                    channel=Channel(r[6]),
                    masked_destination=r[7],
                    template=r[8],
                    locale=r[9],
                    variables=r[10],
                    decision=Decision(r[11]),
                    created_at=r[12],
                )
                for r in rows
            ),
            message_states=tuple(r[13] for r in rows),
        )
