"""Rows for the receipt tests: a message published through a provider, receipts for it."""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg

RECORD_RECEIPT = """
SELECT receipt_id, message_id, duplicate, delivery_state, suppressed
FROM outbox.record_receipt(%s, %s, %s, %s, %s, now(), %s::jsonb)
"""


async def enqueue(
    conn: psycopg.AsyncConnection, destination: str, *, secret: bool = False
) -> uuid.UUID:
    """Enqueue one message to ``destination`` (a sign-up code when ``secret``), as superuser."""
    message_id = uuid.uuid4()
    if secret:
        await conn.execute(
            "SELECT outbox.enqueue_message(%s, 'sign_up', 'email', %s, %s, 'sign_up', '{}',"
            " 'en', 'v1.AAAA.BBBB')",
            (message_id, destination, uuid.uuid4()),
        )
    else:
        await conn.execute(
            "SELECT outbox.enqueue_message(%s, 'notification', 'email', %s, NULL, 'hello')",
            (message_id, destination),
        )
    return message_id


async def claim(conn: psycopg.AsyncConnection, limit: int = 10) -> list[tuple[Any, ...]]:
    """Claim due messages as a worker would: (id, lease_token, attempt_count) of each leased."""
    cursor = await conn.execute(
        "SELECT id, lease_token, attempt_count FROM outbox.claim_messages('w', %s, 60)", (limit,)
    )
    return await cursor.fetchall()


async def publish(
    conn: psycopg.AsyncConnection, destination: str, provider: str, provider_message_id: str
) -> uuid.UUID:
    """A message to ``destination``, claimed and recorded published with the provider's id."""
    message_id = await enqueue(conn, destination)
    leased = {row[0]: row for row in await claim(conn, 100)}
    _, token, attempts = leased[message_id]
    await conn.execute(
        "SELECT * FROM outbox.record_outcomes(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (
            [message_id],
            [token],
            [attempts + 1],
            ["published"],
            [None],
            [""],
            [provider],
            [provider_message_id],
            [None],
            [True],
        ),
    )
    return message_id


async def record(
    conn: psycopg.AsyncConnection,
    *,
    provider: str = "ses",
    event_id: str,
    provider_message_id: str,
    event: str,
    raw: dict[str, Any] | None = None,
) -> tuple[Any, ...]:
    """Call outbox.record_receipt; its one row."""
    cursor = await conn.execute(
        RECORD_RECEIPT,
        (provider, event_id, provider_message_id, event, "", json.dumps(raw or {})),
    )
    row = await cursor.fetchone()
    assert row is not None
    return row


async def message_state(conn: psycopg.AsyncConnection, message_id: uuid.UUID) -> tuple[Any, ...]:
    """(state, dead_letter_reason, has envelope) of a message."""
    cursor = await conn.execute(
        "SELECT m.state, m.dead_letter_reason,"
        " EXISTS (SELECT 1 FROM outbox.envelopes e WHERE e.message_id = m.id)"
        " FROM outbox.messages m WHERE m.id = %s",
        (message_id,),
    )
    row = await cursor.fetchone()
    assert row is not None
    return row
