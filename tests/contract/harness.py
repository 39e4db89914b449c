"""One face for the contract tests over the in-memory fake and the PostgreSQL adapter."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime, timedelta
from typing import Protocol
from uuid import UUID

import attrs
import psycopg

from outbox.adapters.postgres.outbox_writer import PostgresOutboxWriter
from outbox.application.delivery.ports import AttemptRecord, ClaimedMessage, DispatchStore
from outbox.domain.channels import Channel
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import Message, State
from outbox.domain.delivery.outcomes import Outcome, RecordResult, Release, Retry
from outbox.domain.delivery.priorities import Priority
from outbox.domain.delivery.retention import RetentionPolicy
from outbox.domain.purposes import Purpose
from tests.fakes.outbox_store import InMemoryOutboxStore

ENVELOPE = "v1.test-key.c2FsdHNhbHQ.bm9uY2Vub25jZQ.Y2lwaGVydGV4dA"


@attrs.frozen(kw_only=True)
class View:
    """What a test can see of one stored message, whichever store holds it."""

    state: State
    attempts: int
    has_envelope: bool
    reason: FailureClass | None
    available_at: datetime
    lease_token: UUID | None


class Harness(Protocol):
    """A store under test plus the producer side and a way to let time pass."""

    @property
    def store(self) -> DispatchStore: ...

    async def enqueue(self, message: Message) -> None: ...
    async def cancel(self, subject_id: UUID, reason: FailureClass) -> int: ...
    def now(self) -> datetime: ...
    async def sleep(self, seconds: float) -> None: ...
    async def advance(self, seconds: float) -> None: ...
    async def reset(self) -> None: ...
    async def view(self, message_id: UUID) -> View | None: ...
    async def history(self, message_id: UUID) -> list[tuple[int, bool]]: ...
    async def history_tokens(self, message_id: UUID) -> list[UUID | None]: ...


def make_message(
    harness: Harness,
    *,
    purpose: Purpose = Purpose.SIGN_UP,
    subject_id: UUID | None = None,
    expires_in: timedelta | None = timedelta(minutes=10),
    params: dict[str, str] | None = None,
    priority: Priority | None = None,
    not_before: datetime | None = None,
    trace_context: str | None = None,
) -> Message:
    """A valid message for ``purpose``, sealed unless it is a notification."""
    now = harness.now()
    is_notification = purpose is Purpose.NOTIFICATION
    return Message.enqueue(
        id=uuid.uuid4(),
        purpose=purpose,
        channel=Channel.EMAIL,
        destination="person@example.com",
        subject_id=subject_id if subject_id or is_notification else uuid.uuid4(),
        template=str(purpose),
        params=params or {"name": "Ada"},
        locale="en",
        sealed_secret=None if is_notification else ENVELOPE,
        expires_at=None if expires_in is None else now + expires_in,
        priority=priority,
        not_before=not_before,
        trace_context=trace_context,
        now=now,
    )


@attrs.define
class MemoryHarness:
    """The fake; time moves only when a test sleeps."""

    store: InMemoryOutboxStore = attrs.field(factory=InMemoryOutboxStore)

    async def enqueue(self, message: Message) -> None:
        await self.store.enqueue(message)

    async def cancel(self, subject_id: UUID, reason: FailureClass) -> int:
        return await self.store.cancel_by_subject(subject_id=subject_id, reason=reason)

    def now(self) -> datetime:
        return self.store.clock.now()

    async def sleep(self, seconds: float) -> None:
        self.store.clock.advance(timedelta(seconds=seconds))

    async def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass at once."""
        await self.sleep(seconds)

    async def reset(self) -> None:
        """An empty store, its clock where it was."""
        self.store = InMemoryOutboxStore(clock=self.store.clock)

    async def view(self, message_id: UUID) -> View | None:
        message = self.store.messages.get(message_id)
        if message is None:
            return None
        return View(
            state=message.state,
            attempts=message.attempts,
            has_envelope=message.sealed_secret is not None,
            reason=message.dead_letter_reason,
            available_at=message.available_at,
            lease_token=message.lease.token if message.lease else None,
        )

    async def history(self, message_id: UUID) -> list[tuple[int, bool]]:
        return [(a.attempt, a.counted) for a in self.store.attempts if a.message_id == message_id]

    async def history_tokens(self, message_id: UUID) -> list[UUID | None]:
        return [a.lease_token for a in self.store.attempts if a.message_id == message_id]


VIEW = """
SELECT m.state, m.attempt_count, e.message_id IS NOT NULL, m.dead_letter_reason,
       m.available_at, m.lease_token
FROM outbox.messages AS m LEFT JOIN outbox.envelopes AS e ON e.message_id = m.id
WHERE m.id = %s
"""
HISTORY = "SELECT attempt, counted FROM outbox.attempts WHERE message_id = %s ORDER BY id"
HISTORY_TOKENS = "SELECT lease_token FROM outbox.attempts WHERE message_id = %s ORDER BY id"


# Moving the database's clock forward: every live row's times move back instead (only the
# tests' superuser may; the functions read now() and compare it with these columns).
SHIFT = """
UPDATE outbox.messages
SET available_at = available_at - %(by)s, expires_at = expires_at - %(by)s,
    lease_expires_at = lease_expires_at - %(by)s, created_at = created_at - %(by)s
WHERE state IN ('pending', 'leased')
"""
# The claim's floor (0047) and its next whole walk (0052) are times too: they move back with
# the rows.
SHIFT_FLOOR = """
UPDATE outbox.claim_floor
SET floor = floor - %(by)s, computed_at = computed_at - %(by)s, walk_due_at = walk_due_at - %(by)s
"""
EMPTY = "TRUNCATE outbox.messages, outbox.envelopes, outbox.attempts, outbox.claim_floor CASCADE"


@attrs.define
class PostgresHarness:
    """The real adapter as outbox_worker; producers write as outbox_producer; time is real,
    plus what ``advance`` added (the rows' times are moved back by as much)."""

    dispatch: DispatchStore = attrs.field(alias="store")
    connect_as: Callable[..., AbstractAsyncContextManager[psycopg.AsyncConnection]]
    shift: timedelta = timedelta(0)

    @property
    def store(self) -> DispatchStore:
        """The worker's store, its times on this harness's clock."""
        return _Shifted(self.dispatch, self.shift) if self.shift else self.dispatch

    async def enqueue(self, message: Message) -> None:
        message = attrs.evolve(
            message,
            expires_at=None if message.expires_at is None else message.expires_at - self.shift,
        )
        async with self.connect_as("outbox_producer") as conn, conn.transaction():
            await PostgresOutboxWriter(conn).enqueue(message)

    async def cancel(self, subject_id: UUID, reason: FailureClass) -> int:
        async with self.connect_as("identity_service") as conn, conn.transaction():
            return await PostgresOutboxWriter(conn).cancel_by_subject(
                subject_id=subject_id, reason=reason
            )

    def now(self) -> datetime:
        return datetime.now(UTC) + self.shift

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass at once: the live rows' times move back by as much."""
        by = timedelta(seconds=seconds)
        async with self.connect_as() as conn:
            await conn.execute(SHIFT, {"by": by})
            await conn.execute(SHIFT_FLOOR, {"by": by})
        self.shift += by

    async def reset(self) -> None:
        """No message at all, and the clock back to the real one."""
        async with self.connect_as() as conn:
            await conn.execute(EMPTY)
        self.shift = timedelta(0)

    async def view(self, message_id: UUID) -> View | None:
        async with self.connect_as() as conn:
            cursor = await conn.execute(VIEW, (message_id,))
            row = await cursor.fetchone()
        if row is None:
            return None
        state, attempts, has_envelope, reason, available_at, lease_token = row
        return View(
            state=State(state),
            attempts=attempts,
            has_envelope=has_envelope,
            reason=FailureClass(reason) if reason else None,
            available_at=available_at + self.shift,
            lease_token=lease_token,
        )

    async def history(self, message_id: UUID) -> list[tuple[int, bool]]:
        async with self.connect_as() as conn:
            cursor = await conn.execute(HISTORY, (message_id,))
            return [tuple(row) for row in await cursor.fetchall()]

    async def history_tokens(self, message_id: UUID) -> list[UUID | None]:
        async with self.connect_as() as conn:
            cursor = await conn.execute(HISTORY_TOKENS, (message_id,))
            return [row[0] for row in await cursor.fetchall()]


@attrs.define
class _Shifted:
    """A DispatchStore whose times are ``shift`` ahead of the database's."""

    store: DispatchStore
    shift: timedelta

    async def claim(
        self,
        *,
        owner: str,
        limit: int,
        lease: timedelta,
        urgent: bool = False,
        leave_urgent: timedelta = timedelta(0),
    ) -> Sequence[ClaimedMessage]:
        claimed = await self.store.claim(
            owner=owner, limit=limit, lease=lease, urgent=urgent, leave_urgent=leave_urgent
        )
        return [
            attrs.evolve(
                message,
                expires_at=None if message.expires_at is None else message.expires_at + self.shift,
                lease_expires_at=message.lease_expires_at + self.shift,
            )
            for message in claimed
        ]

    async def record(self, records: Sequence[AttemptRecord]) -> Sequence[RecordResult]:
        def back(outcome: Outcome) -> Outcome:
            if isinstance(outcome, Retry | Release):
                return attrs.evolve(outcome, available_at=outcome.available_at - self.shift)
            return outcome

        return await self.store.record(
            [attrs.evolve(record, outcome=back(record.outcome)) for record in records]
        )

    async def expire(self, *, limit: int) -> int:
        return await self.store.expire(limit=limit)

    async def purge(self, *, retention: RetentionPolicy, limit: int) -> int:
        return await self.store.purge(retention=retention, limit=limit)

    async def wait_for_work(self, within: float) -> None:
        await self.store.wait_for_work(within)
