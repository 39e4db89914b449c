"""The messages a run drains: notifications, sealed one-time codes, and a bulk-loaded backlog."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import psycopg
from uuid_utils.compat import uuid7

from outbox.application.ports import Sealer
from outbox.domain.purposes import Purpose

ENQUEUE = """
SELECT outbox.enqueue_message(
    %(id)s, %(purpose)s, %(channel)s, %(destination)s, %(subject_id)s, %(template)s,
    %(params)s::jsonb, 'en', %(sealed)s, %(expires_at)s
)
"""
# The bulk backlog: what enqueue_message would write for a notification, a million at a
# time. created_at steps back one microsecond per row, so claim order is well defined.
BULK_NOTIFICATIONS = """
INSERT INTO outbox.messages
    (id, purpose, channel, destination, subject_id, template, params, locale,
     available_at, created_at)
SELECT gen_random_uuid(), 'notification', 'email', 'person' || g || '@example.com', NULL,
       'notification',
       jsonb_build_object('subject', 'Your weekly summary', 'body', 'Hello person ' || g),
       'en', t.at, t.at
FROM generate_series(1, %(count)s) AS g,
     LATERAL (SELECT now() - (%(count)s - g) * interval '1 microsecond' AS at) AS t
"""
CODE_LIFETIME = timedelta(minutes=10)


def notification(n: int) -> dict[str, object]:
    """The enqueue_message arguments of the n-th plain notification."""
    return {
        "id": uuid7(),
        "purpose": Purpose.NOTIFICATION.value,
        "channel": "email",
        "destination": f"person{n}@example.com",
        "subject_id": None,
        "template": "notification",
        "params": json.dumps({"subject": "Your weekly summary", "body": f"Hello person {n}"}),
        "sealed": None,
        "expires_at": None,
    }


def sealed_code(n: int, sealer: Sealer) -> dict[str, object]:
    """The enqueue_message arguments of the n-th sign-up code, sealed, for its own subject."""
    message_id = uuid7()
    return {
        "id": message_id,
        "purpose": Purpose.SIGN_UP.value,
        "channel": "email",
        "destination": f"person{n}@example.com",
        "subject_id": uuid7(),
        "template": "sign_up",
        "params": json.dumps({"expires_in_minutes": "10"}),
        "sealed": sealer.seal(
            message_id=message_id, purpose=Purpose.SIGN_UP, plaintext=f"{n % 1_000_000:06d}"
        ),
        "expires_at": datetime.now(UTC) + CODE_LIFETIME,
    }


async def load(conninfo: str, rows: list[dict[str, object]]) -> None:
    """Enqueue ``rows`` through outbox.enqueue_message in one transaction, then VACUUM ANALYZE."""
    async with await psycopg.AsyncConnection.connect(conninfo) as conn:
        async with conn.cursor() as cursor:
            await cursor.executemany(ENQUEUE, rows)
        await conn.commit()
    await vacuum(conninfo)


async def bulk_load(conninfo: str, count: int) -> None:
    """Insert ``count`` pending notifications with one INSERT … SELECT, then VACUUM ANALYZE."""
    async with await psycopg.AsyncConnection.connect(conninfo) as conn:
        await conn.execute(BULK_NOTIFICATIONS, {"count": count})
        await conn.commit()
    await vacuum(conninfo)


async def empty(conninfo: str) -> None:
    """Remove every message, envelope and attempt."""
    async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
        await conn.execute("TRUNCATE outbox.attempts, outbox.envelopes, outbox.messages CASCADE")


async def vacuum(conninfo: str) -> None:
    """VACUUM ANALYZE the queue tables, so every system starts from the same clean state."""
    async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
        for table in ("outbox.messages", "outbox.envelopes", "outbox.attempts"):
            await conn.execute(f"VACUUM ANALYZE {table}")
