"""ReceiptStore and SuppressionStore over the receipt functions (0030_receipt_functions.sql).

The functions correlate, dedupe, advance the delivery state and suppress in the database;
this adapter passes the sanitised receipt in and maps rows to views.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, LiteralString
from uuid import UUID

import psycopg
from psycopg import AsyncConnection
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.error_translation import translate
from outbox.adapters.postgres.operator_store import operator_errors
from outbox.adapters.postgres.views import gated, read_views
from outbox.application.delivery.views import ReceiptView, SuppressionChange, SuppressionView
from outbox.application.staff import StaffActor
from outbox.domain.channels import Channel
from outbox.domain.delivery.receipts import Receipt, RecordedReceipt

RECORD = """
SELECT receipt_id, message_id, duplicate, delivery_state, suppressed
FROM outbox.record_receipt(%s::text, %s::text, %s::text, %s::text, %s::text,
                           %s::timestamptz, %s::jsonb)
"""
DELIVERY_STATE_COUNTS = "SELECT state, messages FROM outbox.delivery_state_counts()"
SUPPRESSION_COLUMNS = (
    "SELECT id, destination, channel, cause, coalesce(reason, '') AS reason, created_at, lifted_at "
)
SUPPRESSIONS = (
    SUPPRESSION_COLUMNS + "FROM outbox.list_suppressions(%s::uuid, %s::boolean, %s::integer)"
)
STAFF_SUPPRESSIONS = (
    SUPPRESSION_COLUMNS
    + "FROM outbox.staff_suppressions(%s::uuid, %s::text, %s::boolean, %s::integer)"
)
ADD = (
    "SELECT id, destination, created FROM outbox.add_suppression("
    "%s::uuid, NULL::uuid, %s::text, %s::text, %s::text)"
)
STAFF_ADD = (
    "SELECT id, destination, created FROM outbox.staff_add_suppression("
    "%s::uuid, %s::text, %s::text, %s::text, %s::text)"
)
LIFT = (
    "SELECT id, destination FROM outbox.lift_suppression(%s::uuid, NULL::uuid, %s::text, %s::text)"
)
STAFF_LIFT = (
    "SELECT id, destination FROM outbox.staff_lift_suppression("
    "%s::uuid, %s::text, %s::text, %s::text)"
)
RECEIPT_COLUMNS = "SELECT id, provider, event, detail, occurred_at, received_at "
RECEIPTS = RECEIPT_COLUMNS + "FROM outbox.message_receipts(%s::uuid, %s::uuid)"
STAFF_RECEIPTS = (
    RECEIPT_COLUMNS + "FROM outbox.staff_message_receipts(%s::uuid, %s::text, %s::uuid)"
)

Row = tuple[Any, ...]


class PostgresReceiptStore:
    """ReceiptStore on the API pool (role ``identity_service``); one transaction per receipt."""

    def __init__(self, pool: AsyncConnectionPool[AsyncConnection]) -> None:
        self._pool = pool

    async def record(self, receipt: Receipt) -> RecordedReceipt:
        """Keep and apply one receipt (see the port)."""
        params = (
            receipt.provider.value,
            receipt.event_id,
            receipt.provider_message_id,
            receipt.event.value,
            receipt.detail,
            receipt.occurred_at,
            Jsonb(dict(receipt.raw)),
        )
        try:
            async with self._pool.connection() as conn:
                cursor = await conn.execute(RECORD, params)
                row = await cursor.fetchone()
        except psycopg.Error as error:
            translated = translate(error)
            if translated is None:
                raise
            raise translated from error
        if row is None:  # the function always answers one row
            raise RuntimeError("outbox.record_receipt answered no row")
        return RecordedReceipt(
            receipt_id=row[0],
            message_id=row[1],
            duplicate=row[2],
            delivery_state=row[3],
            suppressed=row[4],
        )

    async def delivery_state_counts(self) -> dict[str, int]:
        """Published messages per delivery state, every state present."""
        try:
            async with self._pool.connection() as conn:
                cursor = await conn.execute(DELIVERY_STATE_COUNTS)
                return {state: int(count) for state, count in await cursor.fetchall()}
        except psycopg.Error as error:
            translated = translate(error)
            if translated is None:
                raise
            raise translated from error


class PostgresSuppressionStore:
    """SuppressionStore on a pool: the API's (staff with an elevation) or the operator's."""

    def __init__(self, pool: AsyncConnectionPool[AsyncConnection]) -> None:
        self._pool = pool

    async def suppressions(
        self, *, actor: StaffActor | None, include_lifted: bool, limit: int
    ) -> Sequence[SuppressionView]:
        """Up to ``limit`` suppressions, newest first."""
        query, params = gated(actor, STAFF_SUPPRESSIONS, SUPPRESSIONS, (include_lifted, limit))
        with operator_errors():
            return await read_views(self._pool, SuppressionView, query, params)

    async def add(
        self, *, actor: StaffActor | None, destination: str, channel: Channel, reason: str
    ) -> SuppressionChange:
        """Suppress ``destination``, audited."""
        query, params = gated(actor, STAFF_ADD, ADD, (destination, channel.value, reason))
        rows = await self._all(query, params, write=True)
        return SuppressionChange(id=rows[0][0], destination=rows[0][1], changed=rows[0][2])

    async def lift(
        self, *, actor: StaffActor | None, destination: str, reason: str
    ) -> SuppressionChange | None:
        """Lift the active suppression of ``destination``, audited."""
        query, params = gated(actor, STAFF_LIFT, LIFT, (destination, reason))
        rows = await self._all(query, params, write=True)
        if not rows:
            return None
        return SuppressionChange(id=rows[0][0], destination=rows[0][1], changed=True)

    async def receipts(
        self, *, actor: StaffActor | None, message_id: UUID
    ) -> Sequence[ReceiptView]:
        """The receipts of one message, oldest first."""
        query, params = gated(actor, STAFF_RECEIPTS, RECEIPTS, (message_id,))
        with operator_errors():
            return await read_views(self._pool, ReceiptView, query, params)

    async def _all(
        self, query: LiteralString, params: tuple[Any, ...], *, write: bool = False
    ) -> list[Row]:
        with operator_errors():
            async with self._pool.connection() as conn:
                if write:
                    async with conn.transaction():
                        cursor = await conn.execute(query, params)
                        return await cursor.fetchall()
                cursor = await conn.execute(query, params)
                return await cursor.fetchall()
