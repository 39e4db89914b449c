"""An in-memory outbox store: DispatchStore and OutboxWriter over the domain's transitions.

It follows the PostgreSQL functions rule for rule (the contract tests in tests/contract/ run
against both): the clock stands in for the database clock, enqueue resets the timestamps,
an envelope must look like one, and a record that fails any fence answers ``lease_lost``.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from uuid import UUID

import attrs

from outbox.application.delivery.errors import DuplicateMessage
from outbox.application.delivery.ports import AttemptRecord, ClaimedMessage
from outbox.application.errors import InvalidRequest
from outbox.domain.delivery.errors import InvalidMessage
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import Message, State
from outbox.domain.delivery.outcomes import Outcome, RecordResult, Release, Retry
from outbox.domain.delivery.priorities import ClaimKey, Priority, claim_order
from outbox.domain.delivery.retention import RetentionPolicy
from tests.fakes.clock import FixedClock

# The same shape as the CHECK on outbox.envelopes.sealed.
ENVELOPE_SHAPE = re.compile(r"v[0-9]+(\.[A-Za-z0-9_-]+){2,}")
CANCEL_REASONS = frozenset({FailureClass.CHALLENGE_CONSUMED, FailureClass.INVITATION_REVOKED})


@attrs.frozen(kw_only=True)
class RecordedAttempt:
    """One row of attempt history, as outbox.attempts keeps it."""

    message_id: UUID
    attempt: int
    counted: bool
    outcome: Outcome
    provider: str
    recorded_at: datetime
    lease_token: UUID  # the lease the outcome was recorded under


def _claim_key(message: Message) -> ClaimKey:
    claimable_at = message.claimable_at
    assert claimable_at is not None  # only live messages are candidates
    return (claimable_at, message.created_at, message.id)


def _claimed(message: Message, token: UUID, lease_expires_at: datetime) -> ClaimedMessage:
    return ClaimedMessage(
        id=message.id,
        purpose=message.purpose,
        channel=message.channel,
        destination=message.destination,
        subject_id=message.subject_id,
        template=message.template,
        params=dict(message.params),
        locale=message.locale,
        envelope=message.sealed_secret,
        attempts=message.attempts,
        expires_at=message.expires_at,
        lease_token=token,
        lease_expires_at=lease_expires_at,
        priority=message.priority,
        trace_context=message.trace_context,
    )


@attrs.define
class InMemoryOutboxStore:
    """Messages by id, attempt history and wake-ups; inspect ``messages`` and ``attempts``."""

    clock: FixedClock = attrs.field(factory=FixedClock)
    messages: dict[UUID, Message] = attrs.field(factory=dict)
    attempts: list[RecordedAttempt] = attrs.field(factory=list)
    notifications: int = 0
    _wake: asyncio.Event | None = attrs.field(default=None, repr=False)

    # OutboxWriter

    async def enqueue(self, message: Message) -> None:
        """Insert a pending message at the clock's now; supersede older ones of its subject."""
        if message.id in self.messages:
            raise DuplicateMessage("messages_pkey")
        if message.sealed_secret is not None and not ENVELOPE_SHAPE.fullmatch(
            message.sealed_secret
        ):
            raise InvalidRequest("envelopes_sealed_shape")
        now = self.clock.now()
        try:
            fresh = Message.enqueue(
                id=message.id,
                purpose=message.purpose,
                channel=message.channel,
                destination=message.destination,
                subject_id=message.subject_id,
                template=message.template,
                params=message.params,
                locale=message.locale,
                sealed_secret=message.sealed_secret,
                expires_at=message.expires_at,
                priority=message.priority,
                not_before=message.available_at if message.is_delayed else None,
                trace_context=message.trace_context,
                now=now,
            )
        except InvalidMessage as error:
            raise InvalidRequest(str(error)) from None
        self.messages[fresh.id] = fresh
        if fresh.purpose.is_supersedable and fresh.subject_id is not None:
            for other in self._live():
                if (
                    other.id != fresh.id
                    and other.subject_id == fresh.subject_id
                    and other.purpose is fresh.purpose
                ):
                    self.messages[other.id] = other.supersede(now)
        self.notifications += 1
        if fresh.priority != Priority.HIGH:  # high priority wakes the reserved slot only (0065)
            self._signal().set()

    async def cancel_by_subject(self, *, subject_id: UUID, reason: FailureClass) -> int:
        """Withdraw every live message of ``subject_id`` that carries a secret (never a
        notice or a notification) with ``reason``; return how many."""
        if reason not in CANCEL_REASONS:
            raise InvalidRequest(f"p_reason: {reason} is not a cancellation reason")
        now = self.clock.now()
        cancelled = [
            m for m in self._live() if m.subject_id == subject_id and m.purpose.carries_secret
        ]
        for message in cancelled:
            self.messages[message.id] = message.cancel(reason, now)
        return len(cancelled)

    # DispatchStore

    async def claim(
        self,
        *,
        owner: str,
        limit: int,
        lease: timedelta,
        urgent: bool = False,
        leave_urgent: timedelta = timedelta(0),
    ) -> Sequence[ClaimedMessage]:
        """Lease up to ``limit`` due messages; expired candidates are dead-lettered instead.

        ``urgent``: high-priority messages only. ``leave_urgent``: a high-priority message
        due for less than this is left out.
        """
        if not owner or limit < 1 or lease <= timedelta(0):
            raise InvalidRequest("a claim names its worker, a positive limit and lease")
        if leave_urgent < timedelta(0):
            raise InvalidRequest("p_leave_urgent_seconds: must be zero or more")
        now = self.clock.now()
        due = claim_order(
            [
                m
                for m in self._live()
                if m.is_claimable(now)
                and (not urgent or m.priority == Priority.HIGH)
                and (m.priority != Priority.HIGH or _claim_key(m)[0] <= now - leave_urgent)
            ],
            limit,
            key=_claim_key,
            priority=lambda m: m.priority,
        )
        claimed = []
        for message in due:
            if message.is_expired(now):
                self.messages[message.id] = message.expire(now)
                continue
            token = uuid.uuid4()
            leased = message.claim(owner=owner, token=token, now=now, duration=lease)
            self.messages[leased.id] = leased
            claimed.append(_claimed(leased, token, now + lease))
        order = {m.id: (-m.priority, m.available_at, m.created_at, m.id) for m in due}
        return sorted(claimed, key=lambda c: order[c.id])

    async def record(self, records: Sequence[AttemptRecord]) -> Sequence[RecordResult]:
        """Record outcomes in order; one result per record, ``lease_lost`` when fenced off.

        Raises InvalidRequest, recording nothing, when a record that would apply names a
        retry time that is not in the future (as the database's trigger does).
        """
        now = self.clock.now()
        for record in records:
            match record.outcome:
                case Retry(available_at=at) | Release(available_at=at) if (
                    at <= now and self._applies(record, now)
                ):
                    raise InvalidRequest("p_retry_at: a retry time must be in the future")
                case _:
                    pass
        return [self._record_one(record, now) for record in records]

    async def expire(self, *, limit: int) -> int:
        """Dead-letter up to ``limit`` expired messages nobody holds; return how many."""
        if limit < 1:
            raise InvalidRequest("p_limit: must be at least 1")
        now = self.clock.now()
        expired = sorted(
            (
                m
                for m in self._live()
                if m.is_expired(now) and (m.lease is None or not m.lease.is_live(now))
            ),
            key=lambda m: m.expires_at or now,
        )[:limit]
        for message in expired:
            self.messages[message.id] = message.expire(now)
        return len(expired)

    async def purge(self, *, retention: RetentionPolicy, limit: int) -> int:
        """Delete up to ``limit`` final messages past retention, with their history."""
        if limit < 1:
            raise InvalidRequest("p_limit: must be at least 1")
        now = self.clock.now()
        published = sorted(
            (m for m in self.messages.values() if m.state is State.PUBLISHED),
            key=lambda m: m.published_at or now,
        )
        dead = sorted(
            (m for m in self.messages.values() if m.state is State.DEAD_LETTERED),
            key=lambda m: m.dead_lettered_at or now,
        )
        doomed = [m.id for m in [*published, *dead] if retention.is_due(m, now)][:limit]
        for message_id in doomed:
            del self.messages[message_id]
        self.attempts = [a for a in self.attempts if a.message_id not in set(doomed)]
        return len(doomed)

    async def wait_for_work(self, within: float) -> None:
        """Return at once if something not of high priority was enqueued since the last wait,
        else within seconds."""
        wake = self._signal()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), within)
        wake.clear()

    # Internals

    def _live(self) -> list[Message]:
        return [m for m in self.messages.values() if m.is_live]

    def _signal(self) -> asyncio.Event:
        if self._wake is None:
            self._wake = asyncio.Event()
        return self._wake

    def _applies(self, record: AttemptRecord, now: datetime) -> bool:
        message = self.messages.get(record.message_id)
        return not (
            message is None
            or not message.holds(record.lease_token, now)
            or (record.outcome.counts_attempt and record.attempt != message.attempts + 1)
        )

    def _record_one(self, record: AttemptRecord, now: datetime) -> RecordResult:
        message = self.messages.get(record.message_id)
        counted = record.outcome.counts_attempt
        if message is None or not self._applies(record, now):
            return RecordResult.LEASE_LOST
        recorded = message.record(token=record.lease_token, outcome=record.outcome, now=now)
        self.messages[recorded.id] = recorded
        self.attempts.append(
            RecordedAttempt(
                message_id=recorded.id,
                attempt=recorded.attempts if counted else recorded.attempts + 1,
                counted=counted,
                outcome=record.outcome,
                provider=record.provider,
                recorded_at=now,
                lease_token=record.lease_token,
            )
        )
        return RecordResult.RECORDED
