"""The identity ports under contract test: the in-memory fakes, or PostgreSQL (identity_service)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any, Protocol
from uuid import UUID

import attrs
import psycopg

from outbox.adapters.postgres.identity_transactions import PostgresIdentityTransactions
from outbox.adapters.postgres.pool import open_pool
from outbox.adapters.postgres.rate_limiter import PostgresRateLimiter
from outbox.application.identity.ports import IdentityTransactions, RateLimiter
from tests.fakes.clock import FixedClock
from tests.fakes.identity import InMemoryIdentityTransactions, InMemoryRateLimiter


class IdentityHarness(Protocol):
    """The ports, a clock close to the database's, and a view of the messages enqueued."""

    @property
    def transactions(self) -> IdentityTransactions: ...
    @property
    def limiter(self) -> RateLimiter: ...

    def now(self) -> datetime: ...
    async def messages(self, subject_id: UUID) -> list[tuple[str, str | None]]: ...


@attrs.define
class MemoryIdentityHarness:
    """The in-memory fakes."""

    clock: FixedClock = attrs.field(factory=lambda: FixedClock(datetime.now(UTC)))
    limiter: InMemoryRateLimiter = attrs.field(factory=InMemoryRateLimiter)
    transactions: InMemoryIdentityTransactions = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.transactions = InMemoryIdentityTransactions(clock=self.clock)

    def now(self) -> datetime:
        return self.clock.now()

    async def messages(self, subject_id: UUID) -> list[tuple[str, str | None]]:
        found = sorted(
            (m for m in self.transactions.tables.messages.values() if m.subject_id == subject_id),
            key=lambda m: m.id,
        )
        reasons = [m.dead_letter_reason.value if m.dead_letter_reason else None for m in found]
        return [(m.state.value, r) for m, r in zip(found, reasons, strict=True)]


@attrs.define
class PostgresIdentityHarness:
    """The real adapters on a pool acting as identity_service."""

    transactions: PostgresIdentityTransactions
    limiter: PostgresRateLimiter
    database_url: str

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def messages(self, subject_id: UUID) -> list[tuple[str, str | None]]:
        async with await psycopg.AsyncConnection.connect(self.database_url) as conn:
            cursor = await conn.execute(
                "SELECT state, dead_letter_reason FROM outbox.messages"
                " WHERE subject_id = %s ORDER BY id",
                (subject_id,),
            )
            rows: list[Any] = await cursor.fetchall()
        return [(state, reason) for state, reason in rows]


async def postgres_identity_harness(database_url: str) -> AsyncIterator[PostgresIdentityHarness]:
    """The PostgreSQL harness, its pool closed afterwards."""
    pool = await open_pool(database_url, min_size=1, max_size=4, role="identity_service")
    try:
        yield PostgresIdentityHarness(
            transactions=PostgresIdentityTransactions(pool),
            limiter=PostgresRateLimiter(pool),
            database_url=database_url,
        )
    finally:
        await pool.close()
