"""A Hypothesis state machine of the message lifecycle, checked against a simple model.

Several workers claim, send and record through the real ``Message`` methods while the
clock moves, producers resend (supersede), subjects are consumed or revoked (cancel), the
sweep expires, and operators reissue or requeue dead letters. After every step the real
messages must agree with a model written from the lifecycle table in docs/architecture.md,
and the invariants hold: final states never change, at most one live lease, attempts within
the cap, a stale or expired token never records, no final message keeps a secret.
"""

from __future__ import annotations

from datetime import timedelta
from uuid import UUID

import attrs
import pytest
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
)

from outbox.domain.channels import Channel
from outbox.domain.delivery.errors import InvalidTransition, LeaseLost
from outbox.domain.delivery.failures import DeliveryFailure, FailureClass
from outbox.domain.delivery.messages import Message, State
from outbox.domain.delivery.outcomes import DeadLetter, Outcome, Published, Release, Retry
from outbox.domain.delivery.retry_policy import RetryPolicy
from outbox.domain.purposes import Purpose
from tests.fakes.clock import EPOCH
from tests.lifecycle_model import Expected, expiry_reason_of

LEASE = timedelta(seconds=60)
WORKERS = ("worker-1", "worker-2", "worker-3")
SUBJECTS = (UUID(int=0xA1), UUID(int=0xA2))
# Purposes whose messages carry no sealed secret (and are never superseded).
NO_SECRET = (Purpose.NOTIFICATION, Purpose.SECURITY_NOTICE)
RETRYABLE = (
    FailureClass.THROTTLED,
    FailureClass.UNAVAILABLE,
    FailureClass.INDETERMINATE,
    FailureClass.UNEXPECTED_WORKER_ERROR,
    FailureClass.LINK_UNCONFIGURED,
)
SEND_FAILURES = (
    FailureClass.REJECTED,
    FailureClass.THROTTLED,
    FailureClass.UNAVAILABLE,
    FailureClass.INDETERMINATE,
    FailureClass.PROVIDER_SUSPENDED,
    FailureClass.DECRYPTION_FAILED,
    FailureClass.UNEXPECTED_WORKER_ERROR,
    FailureClass.LINK_UNCONFIGURED,
)
# Mostly retryable failures, so messages do reach the attempt cap within a run.
failures = st.one_of(st.none(), st.sampled_from(SEND_FAILURES), st.sampled_from(RETRYABLE))
retry_afters = st.sampled_from([None, None, None, -60, 0, 30, 600]) | st.integers(-60, 7200)


@attrs.frozen
class Held:
    """A lease a worker believes it holds, with the message as it was claimed."""

    worker: str
    message_id: UUID
    token: UUID
    claimed: Message


class Lifecycle(RuleBasedStateMachine):
    """Drives real messages and a model side by side."""

    ids = Bundle("ids")
    leases = Bundle("leases")

    def __init__(self) -> None:
        super().__init__()
        self.now = EPOCH
        self.policy = RetryPolicy()
        self.store: dict[UUID, Message] = {}
        self.model: dict[UUID, Expected] = {}
        self.finals: dict[UUID, Message] = {}
        self.issued: dict[UUID, list[UUID]] = {}
        self.counter = 0

    def _next_uuid(self) -> UUID:
        self.counter += 1
        return UUID(int=self.counter)

    def _add(self, message: Message) -> UUID:
        self.store[message.id] = message
        self.issued[message.id] = []
        self.model[message.id] = Expected(
            purpose=message.purpose,
            subject=message.subject_id,
            expires_at=message.expires_at,
            available_at=self.now,
            has_secret=message.purpose not in NO_SECRET,
        )
        return message.id

    # --- set-up and time ---------------------------------------------------------------

    @initialize(
        schedule=st.lists(st.integers(1, 300), min_size=1, max_size=5),
        max_attempts=st.integers(1, 6),
    )
    def configure(self, schedule: list[int], max_attempts: int) -> None:
        self.policy = RetryPolicy(
            schedule=[timedelta(seconds=s) for s in schedule], max_attempts=max_attempts
        )

    @initialize(
        target=ids,
        purpose=st.sampled_from(Purpose),
        subject=st.sampled_from(SUBJECTS),
        lifetime=st.sampled_from([None, 600]),
    )
    def first_message(self, purpose: Purpose, subject: UUID, lifetime: int | None) -> UUID:
        return self._enqueue(purpose, subject, lifetime)

    @rule(seconds=st.sampled_from([0, 1, 5, 10, 30, 59, 60, 61, 120, 300, 900, 1800]))
    def advance(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)

    # --- producers ---------------------------------------------------------------------

    @rule(
        target=ids,
        purpose=st.sampled_from(Purpose),
        subject=st.sampled_from(SUBJECTS),
        lifetime=st.sampled_from([None, 30, 61, 90, 600, 3600]),
    )
    def enqueue(self, purpose: Purpose, subject: UUID, lifetime: int | None) -> UUID:
        return self._enqueue(purpose, subject, lifetime)

    def _enqueue(self, purpose: Purpose, subject: UUID, lifetime: int | None) -> UUID:
        """Enqueue as the SQL producer does: older live messages of a resend are superseded."""
        notification = purpose is Purpose.NOTIFICATION
        if purpose.is_supersedable:
            for message_id, expected in self.model.items():
                if expected.live and (expected.purpose, expected.subject) == (purpose, subject):
                    self.store[message_id] = self.store[message_id].supersede(self.now)
                    expected.finish(State.DEAD_LETTERED, FailureClass.SUPERSEDED_BY_RESEND)
        new_id = self._next_uuid()
        return self._add(
            Message.enqueue(
                id=new_id,
                purpose=purpose,
                channel=Channel.EMAIL,
                destination="alice@example.com",
                subject_id=None if notification else subject,
                template=str(purpose),
                now=self.now,
                sealed_secret=None if purpose in NO_SECRET else f"v1.secret-{new_id.int}",
                expires_at=None if lifetime is None else self.now + timedelta(seconds=lifetime),
            )
        )

    # --- workers -----------------------------------------------------------------------

    @rule(target=leases, worker=st.sampled_from(WORKERS), message_id=ids)
    def claim(self, worker: str, message_id: UUID) -> object:
        held = self._claim(worker, message_id)
        return multiple() if held is None else held

    def _claim(self, worker: str, message_id: UUID) -> Held | None:
        """Claim as the claim query does: an expired message is dead-lettered, not leased."""
        message, expected = self.store[message_id], self.model[message_id]
        assert expected.claimable(self.now) == message.is_claimable(self.now)
        token = self._next_uuid()
        if not expected.claimable(self.now) or expected.expired(self.now):
            with pytest.raises(InvalidTransition):
                message.claim(owner=worker, token=token, now=self.now, duration=LEASE)
            if expected.claimable(self.now):
                event("claim found it expired")
                self.store[message_id] = message.expire(self.now)
                expected.finish(State.DEAD_LETTERED, expiry_reason_of(expected.purpose))
            return None
        claimed = message.claim(owner=worker, token=token, now=self.now, duration=LEASE)
        self.store[message_id] = claimed
        self.issued[message_id].append(token)
        expected.state = State.LEASED
        expected.token = token
        expected.lease_until = self.now + LEASE
        return Held(worker=worker, message_id=message_id, token=token, claimed=claimed)

    @rule(
        target=leases,
        worker=st.sampled_from(WORKERS),
        turns=st.lists(st.tuples(failures, retry_afters), min_size=1, max_size=10),
    )
    def worker_polls(
        self, worker: str, turns: list[tuple[FailureClass | None, int | None]]
    ) -> object:
        """A worker loop: sleep until the oldest message is due, claim it, send, record."""
        helds = []
        for failure, retry_after in turns:
            pending = [m for m in self.store.values() if m.is_live]
            due = sorted(
                (m.available_at, m.created_at, m.id) for m in pending if m.is_claimable(self.now)
            )
            if not due:
                waiting = [m.available_at for m in pending if m.state is State.PENDING]
                if not waiting:
                    break
                self.now = max(self.now, min(waiting))
                continue
            held = self._claim(worker, due[0][2])
            if held is not None:
                self._send_and_record(held, failure, retry_after)
                helds.append(held)
        return multiple(*helds)

    @rule(
        target=leases,
        data=st.data(),
        worker=st.sampled_from(WORKERS),
        rival=st.none() | st.sampled_from(WORKERS),
        pause=st.sampled_from([59, 60, 61, 300]).map(lambda s: timedelta(seconds=s)),
        sweep_midway=st.booleans(),
        failure=failures,
    )
    def worker_frozen_past_its_lease(
        self,
        *,
        data: st.DataObject,
        worker: str,
        rival: str | None,
        pause: timedelta,
        sweep_midway: bool,
        failure: FailureClass | None,
    ) -> object:
        """A worker claims, freezes around its lease expiry (a sweep or rival may act), resumes."""
        due = sorted(m.id for m in self.store.values() if m.is_claimable(self.now))
        if not due:
            return multiple()
        held = self._claim(worker, data.draw(st.sampled_from(due)))
        if held is None:
            return multiple()
        self.now += pause / 2
        if sweep_midway:
            self._sweep_expiry()
        self.now += pause - pause / 2
        rival_held = None if rival is None else self._claim(rival, held.message_id)
        self._send_and_record(held, failure, None)
        return multiple(held, *([] if rival_held is None else [rival_held]))

    @rule(
        held=leases,
        failure=failures,
        retry_after=retry_afters,
    )
    def send_and_record(
        self, held: Held, failure: FailureClass | None, retry_after: int | None
    ) -> None:
        self._send_and_record(held, failure, retry_after)

    def _send_and_record(
        self, held: Held, failure: FailureClass | None, retry_after: int | None
    ) -> None:
        """A worker follows the policy with what it claimed, then records under its token."""
        claimed = held.claimed
        outcome: Outcome
        if claimed.is_expired(self.now):
            outcome = DeadLetter(reason=expiry_reason_of(claimed.purpose), attempted=False)
        elif failure is None:
            outcome = Published()
        else:
            hint = None if retry_after is None else self.now + timedelta(seconds=retry_after)
            outcome = self.policy.decide(
                DeliveryFailure(failure_class=failure, retry_after=hint),
                attempt=claimed.attempts + 1,
                now=self.now,
                expires_at=claimed.expires_at,
                purpose=claimed.purpose,
            )
        self._record(held, outcome)

    @rule(held=leases)
    def record_published_late_or_stale(self, held: Held) -> None:
        """A frozen worker wakes up and records whatever happened to the lease meanwhile."""
        self._record(held, Published())

    @rule(message_id=ids)
    def record_with_a_forged_token(self, message_id: UUID) -> None:
        message = self.store[message_id]
        with pytest.raises(LeaseLost):
            message.record(token=UUID(int=2**100), outcome=Published(), now=self.now)

    def _record(self, held: Held, outcome: Outcome) -> None:
        message, expected = self.store[held.message_id], self.model[held.message_id]
        if not expected.holds(held.token, self.now):
            assert not message.holds(held.token, self.now)
            with pytest.raises(LeaseLost):
                message.record(token=held.token, outcome=outcome, now=self.now)
            event("record refused: lease lost")
            return
        event(f"recorded {type(outcome).__name__}")
        self.store[held.message_id] = message.record(
            token=held.token, outcome=outcome, now=self.now
        )
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
                if reason in RETRYABLE:
                    event(f"reached the cap of {self.policy.max_attempts} attempts")
                expected.finish(State.DEAD_LETTERED, reason)

    # --- withdrawals -------------------------------------------------------------------

    @rule(message_id=ids)
    def supersede(self, message_id: UUID) -> None:
        message, expected = self.store[message_id], self.model[message_id]
        if expected.live and expected.purpose not in (Purpose.INVITATION, *NO_SECRET):
            self.store[message_id] = message.supersede(self.now)
            expected.finish(State.DEAD_LETTERED, FailureClass.SUPERSEDED_BY_RESEND)
        else:
            with pytest.raises(InvalidTransition):
                message.supersede(self.now)

    @rule(message_id=ids)
    def consume_or_revoke_subject(self, message_id: UUID) -> None:
        message, expected = self.store[message_id], self.model[message_id]
        reason = (
            FailureClass.INVITATION_REVOKED
            if expected.purpose is Purpose.INVITATION
            else FailureClass.CHALLENGE_CONSUMED
        )
        if expected.live:
            self.store[message_id] = message.cancel(reason, self.now)
            expected.finish(State.DEAD_LETTERED, reason)
        else:
            with pytest.raises(InvalidTransition):
                message.cancel(reason, self.now)

    @rule()
    def sweep_expiry(self) -> None:
        self._sweep_expiry()

    def _sweep_expiry(self) -> None:
        """The expiry sweep: expired and nobody holds it; a live lease is left alone."""
        for message_id, expected in self.model.items():
            message = self.store[message_id]
            if expected.live and expected.expired(self.now) and not expected.lease_live(self.now):
                event("sweep expired a message")
                self.store[message_id] = message.expire(self.now)
                expected.finish(State.DEAD_LETTERED, expiry_reason_of(expected.purpose))
            else:
                with pytest.raises(InvalidTransition):
                    message.expire(self.now)

    # --- operators ---------------------------------------------------------------------

    @rule(target=ids, message_id=ids)
    def reissue(self, message_id: UUID) -> object:
        message, expected = self.store[message_id], self.model[message_id]
        new_id = self._next_uuid()
        reissuable = expected.purpose in (
            Purpose.SIGN_UP,
            Purpose.ADD_SIGN_IN_METHOD,
            Purpose.PASSWORD_RECOVERY,
            Purpose.STEP_UP,
        )
        if expected.state is not State.DEAD_LETTERED or not reissuable:
            with pytest.raises(InvalidTransition):
                message.reissue(
                    new_id=new_id, sealed_secret="v1.new", now=self.now, expires_at=None
                )
            return multiple()
        copy = message.reissue(
            new_id=new_id,
            sealed_secret=f"v1.secret-{new_id.int}",
            now=self.now,
            expires_at=self.now + timedelta(minutes=10),
        )
        assert (message.purpose, message.subject_id) == (copy.purpose, copy.subject_id)
        return self._add(copy)

    @rule(target=ids, message_id=ids)
    def requeue(self, message_id: UUID) -> object:
        message, expected = self.store[message_id], self.model[message_id]
        new_id = self._next_uuid()
        if (
            expected.state is not State.DEAD_LETTERED
            or expected.purpose is not Purpose.NOTIFICATION
        ):
            with pytest.raises(InvalidTransition):
                message.requeue(new_id=new_id, now=self.now)
            return multiple()
        return self._add(message.requeue(new_id=new_id, now=self.now))

    @precondition(lambda self: bool(self.finals))
    @rule(data=st.data())
    def every_event_on_a_final_message_is_refused(self, data: st.DataObject) -> None:
        message = self.finals[data.draw(st.sampled_from(sorted(self.finals)))]
        token = message.id  # any token: none can hold a final message
        with pytest.raises(InvalidTransition):
            message.claim(owner="w", token=token, now=self.now, duration=LEASE)
        with pytest.raises(LeaseLost):
            message.record(token=token, outcome=Published(), now=self.now)
        with pytest.raises(InvalidTransition):
            message.supersede(self.now)
        with pytest.raises(InvalidTransition):
            message.cancel(FailureClass.CHALLENGE_CONSUMED, self.now)
        with pytest.raises(InvalidTransition):
            message.expire(self.now + timedelta(days=365))

    # --- invariants --------------------------------------------------------------------

    @invariant()
    def messages_agree_with_the_model(self) -> None:
        for message_id, expected in self.model.items():
            message = self.store[message_id]
            assert expected.state == message.state
            assert expected.attempts == message.attempts
            assert expected.reason == message.dead_letter_reason
            assert expected.has_secret == (message.sealed_secret is not None)
            if expected.state is State.PENDING:
                assert expected.available_at == message.available_at
                assert message.lease is None
            if expected.state is State.LEASED:
                assert message.lease is not None
                assert expected.token == message.lease.token
                assert expected.lease_until == message.lease.expires_at

    @invariant()
    def final_messages_never_change(self) -> None:
        for message_id, final in self.finals.items():
            assert self.store[message_id] is final
        for message_id, message in self.store.items():
            if message.state.is_final:
                self.finals.setdefault(message_id, message)

    @invariant()
    def at_most_one_token_holds_each_message(self) -> None:
        for message_id, tokens in self.issued.items():
            message = self.store[message_id]
            holders = [t for t in tokens if message.holds(t, self.now)]
            assert len(holders) <= 1
            if holders:
                assert self.model[message_id].token == holders[0]
                assert message.state is State.LEASED

    @invariant()
    def a_pending_message_is_never_scheduled_past_its_expiry(self) -> None:
        for message in self.store.values():
            if message.state is State.PENDING and message.expires_at is not None:
                assert message.available_at < message.expires_at

    @invariant()
    def attempts_never_exceed_the_cap(self) -> None:
        for message in self.store.values():
            assert 0 <= message.attempts <= self.policy.max_attempts

    @invariant()
    def no_final_message_keeps_a_secret(self) -> None:
        for message in self.store.values():
            if message.state.is_final:
                assert message.sealed_secret is None
                assert message.lease is None


Lifecycle.TestCase.settings = settings(
    max_examples=100, stateful_step_count=80, deadline=None, print_blob=True
)
TestLifecycle = Lifecycle.TestCase
