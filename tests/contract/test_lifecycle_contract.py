"""The message lifecycle, as random runs of the same steps on the fake and on PostgreSQL.

Each example draws a sequence of steps (producers enqueue and cancel, workers claim and
record, the clock moves, the expiry sweep runs) and plays it through the contract harness
against a simple model written from the lifecycle table (docs/architecture.md): after every
step each message's state, attempts, reason, envelope and lease must be what the model says,
and every count a step answers must be the model's. PostgreSQL's clock is moved by shifting
the live rows' timestamps back, so minutes pass in a step; the domain-only state machine
(tests/unit/domain/delivery/test_lifecycle_state_machine.py) explores more paths faster.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from uuid import UUID

import attrs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from outbox.application.delivery.ports import AttemptRecord, ClaimedMessage
from outbox.domain.delivery.failures import DeliveryFailure, FailureClass
from outbox.domain.delivery.messages import State
from outbox.domain.delivery.outcomes import (
    DeadLetter,
    Outcome,
    Published,
    RecordResult,
    Release,
    Retry,
)
from outbox.domain.delivery.retry_policy import RetryPolicy
from outbox.domain.purposes import Purpose
from tests.contract.harness import Harness, make_message
from tests.lifecycle_model import Expected, expiry_reason_of

LEASE = timedelta(seconds=60)
POLICY = RetryPolicy(schedule=[timedelta(seconds=30), timedelta(seconds=120)], max_attempts=3)
SUBJECTS = [uuid.UUID(int=n) for n in (1, 2, 3)]
PURPOSES = [Purpose.SIGN_UP, Purpose.MAGIC_LINK, Purpose.INVITATION, Purpose.NOTIFICATION]
CANCELS = {
    Purpose.INVITATION: FailureClass.INVITATION_REVOKED,
}
SENDS = [
    None,  # published
    FailureClass.UNAVAILABLE,  # retried on the schedule, dead-lettered at the cap
    FailureClass.REJECTED,  # dead-lettered now
    FailureClass.PROVIDER_SUSPENDED,  # released: no attempt spent
]


@attrs.define
class Run:
    """One example: the harness, the model, and the leases workers believe they hold."""

    harness: Harness
    model: dict[UUID, Expected] = attrs.field(factory=dict)
    held: list[ClaimedMessage] = attrs.field(factory=list)

    async def enqueue(self, purpose: Purpose, subject: UUID, lifetime: int | None) -> None:
        now = self.harness.now()
        if purpose.is_supersedable:
            for expected in self.model.values():
                if expected.live and (expected.purpose, expected.subject) == (purpose, subject):
                    expected.finish(State.DEAD_LETTERED, FailureClass.SUPERSEDED_BY_RESEND)
        message = make_message(
            self.harness,
            purpose=purpose,
            subject_id=None if purpose is Purpose.NOTIFICATION else subject,
            expires_in=None if lifetime is None else timedelta(seconds=lifetime),
        )
        await self.harness.enqueue(message)
        self.model[message.id] = Expected(
            purpose=purpose,
            subject=message.subject_id,
            expires_at=message.expires_at,
            available_at=now,
            has_secret=message.sealed_secret is not None,
        )

    async def cancel(self, subject: UUID, purpose: Purpose) -> None:
        reason = CANCELS.get(purpose, FailureClass.CHALLENGE_CONSUMED)
        expected = [m for m in self.model.values() if m.live and m.subject == subject]
        for message in expected:
            message.finish(State.DEAD_LETTERED, reason)
        assert len(expected) == await self.harness.cancel(subject, reason)

    async def claim(self, worker: str) -> None:
        now = self.harness.now()
        due = {i for i, m in self.model.items() if m.claimable(now)}
        for message_id in due:
            expected = self.model[message_id]
            if expected.expired(now):  # the claim dead-letters it instead
                expected.finish(State.DEAD_LETTERED, expiry_reason_of(expected.purpose))
        claimed = await self.harness.store.claim(owner=worker, limit=100, lease=LEASE)
        assert {i for i in due if self.model[i].live} == {c.id for c in claimed}
        for message in claimed:
            expected = self.model[message.id]
            expected.state, expected.token = State.LEASED, message.lease_token
            expected.lease_until = now + LEASE
            self.held.append(message)

    async def record(self, index: int, send: FailureClass | None) -> None:
        if not self.held:
            return
        claimed = self.held.pop(index % len(self.held))
        expected = self.model[claimed.id]
        now = self.harness.now()
        outcome: Outcome = (
            Published()
            if send is None
            else POLICY.decide(
                DeliveryFailure(failure_class=send),
                attempt=claimed.attempts + 1,
                now=now,
                expires_at=claimed.expires_at,
                purpose=claimed.purpose,
            )
        )
        record = AttemptRecord(
            message_id=claimed.id,
            lease_token=claimed.lease_token,
            attempt=claimed.attempts + 1,
            outcome=outcome,
            provider="console",
        )
        holds = expected.holds(claimed.lease_token, now)
        [result] = await self.harness.store.record([record])
        assert (RecordResult.RECORDED if holds else RecordResult.LEASE_LOST) == result
        if not holds:
            return
        match outcome:
            case Published():
                expected.attempts += 1
                expected.finish(State.PUBLISHED)
            case Retry(available_at=at):
                expected.attempts += 1
                expected.back_to_pending(at)
            case Release(available_at=at):
                expected.back_to_pending(at)
            case DeadLetter(reason=reason, attempted=attempted):
                expected.attempts += 1 if attempted else 0
                expected.finish(State.DEAD_LETTERED, reason)

    async def sweep(self) -> None:
        now = self.harness.now()
        expiring = [
            m for m in self.model.values() if m.live and m.expired(now) and not m.lease_live(now)
        ]
        for message in expiring:
            message.finish(State.DEAD_LETTERED, expiry_reason_of(message.purpose))
        assert len(expiring) == await self.harness.store.expire(limit=100)

    async def check(self) -> None:
        """Every message is what the model says."""
        for message_id, expected in self.model.items():
            view = await self.harness.view(message_id)
            assert view is not None
            assert (expected.state, expected.attempts, expected.reason, expected.has_secret) == (
                view.state,
                view.attempts,
                view.reason,
                view.has_envelope,
            ), message_id
            assert (expected.token if expected.state is State.LEASED else None) == view.lease_token


steps = st.one_of(
    st.tuples(
        st.just("enqueue"),
        st.sampled_from(PURPOSES),
        st.sampled_from(SUBJECTS),
        st.sampled_from([None, 30, 90, 600]),
    ),
    st.tuples(st.just("advance"), st.sampled_from([1, 29, 30, 31, 59, 60, 61, 125, 600])),
    st.tuples(st.just("claim"), st.sampled_from(["w1", "w2"])),
    # A worker records what it sent, after a pause: none, or around its lease's end.
    st.tuples(
        st.just("record"),
        st.integers(0, 9),
        st.sampled_from(SENDS),
        st.sampled_from([0, 0, 0, 59, 60, 61]),
    ),
    st.tuples(st.just("cancel"), st.sampled_from(SUBJECTS), st.sampled_from(PURPOSES)),
    st.tuples(st.just("sweep")),
)


async def play(harness: Harness, plan: list[tuple[object, ...]]) -> None:
    """Play ``plan`` on ``harness`` against the model, checking every message after each step."""
    run = Run(harness)
    for step in plan:
        match step:
            case ("enqueue", Purpose() as purpose, UUID() as subject, lifetime):
                await run.enqueue(purpose, subject, lifetime if isinstance(lifetime, int) else None)
            case ("advance", int(seconds)):
                await harness.advance(seconds)
            case ("claim", str(worker)):
                await run.claim(worker)
            case ("record", int(index), send, int(pause)):
                if pause:
                    await harness.advance(pause)  # the worker froze meanwhile
                await run.record(index, send if isinstance(send, FailureClass) else None)
            case ("cancel", UUID() as subject, Purpose() as purpose):
                await run.cancel(subject, purpose)
            case ("sweep",):
                await run.sweep()
        await run.check()


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(plan=st.lists(steps, min_size=1, max_size=20))
async def test_the_store_follows_the_lifecycle(
    lifecycle: Harness, plan: list[tuple[object, ...]]
) -> None:
    await lifecycle.reset()
    await play(lifecycle, plan)
