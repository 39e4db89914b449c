"""Fixtures for worker tests: sealed messages enqueued the producer's way, worker settings."""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID

import psycopg
import pytest

from outbox.adapters.crypto.envelope import EnvelopeSealer
from outbox.adapters.crypto.keyring import Keyring, SealKey, key_line
from outbox.adapters.postgres.outbox_writer import PostgresOutboxWriter
from outbox.adapters.system.ids import Uuid7Ids
from outbox.domain.channels import Channel
from outbox.domain.delivery.messages import Message
from outbox.domain.purposes import Purpose

SEAL_KEY = SealKey("test", bytes(range(32)))
Enqueue = Callable[..., Awaitable[dict[UUID, str]]]


@pytest.fixture
def worker_env(database_url: str, tmp_path: Path) -> dict[str, str]:
    """OUTBOX_* variables for a worker on the test database, acting as outbox_worker."""
    return {
        "OUTBOX_ENV": "development",
        "OUTBOX_DATABASE_URL": database_url,
        "OUTBOX_WORKER_DB_ROLE": "outbox_worker",
        "OUTBOX_SEAL_KEYS": key_line(SEAL_KEY),
        "OUTBOX_DATA_DIR": str(tmp_path / "data"),
        "OUTBOX_LOG_FORMAT": "json",
        "OUTBOX_WORKER_POLL_SECONDS": "0.2",
    }


@pytest.fixture
def enqueue(database_url: str) -> Enqueue:
    """Enqueue ``count`` sign-up codes as outbox_producer, one transaction; return id → code."""
    sealer = EnvelopeSealer(Keyring((SEAL_KEY,)))
    ids = Uuid7Ids()

    async def enqueue(
        count: int, *, destination: str = "alice@example.com", lifetime: timedelta | None = None
    ) -> dict[UUID, str]:
        codes: dict[UUID, str] = {}
        now = datetime.now(UTC)
        async with await psycopg.AsyncConnection.connect(database_url) as conn:
            await conn.execute("SET ROLE outbox_producer")
            writer = PostgresOutboxWriter(conn)
            for _ in range(count):
                message_id = ids.new_id()
                code = f"{secrets.randbelow(10**6):06d}"
                await writer.enqueue(
                    Message.enqueue(
                        id=message_id,
                        purpose=Purpose.SIGN_UP,
                        channel=Channel.EMAIL,
                        destination=destination,
                        subject_id=ids.new_id(),
                        template="sign_up",
                        sealed_secret=sealer.seal(
                            message_id=message_id, purpose=Purpose.SIGN_UP, plaintext=code
                        ),
                        expires_at=now + (lifetime or timedelta(minutes=10)),
                        now=now,
                    )
                )
                codes[message_id] = code
            await conn.commit()
        return codes

    return enqueue
