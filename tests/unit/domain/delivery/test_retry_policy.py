"""The retry policy: schedule, cap, Retry-After, expiry and the failure classes."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from outbox.domain.delivery.failures import Decision, DeliveryFailure, FailureClass
from outbox.domain.delivery.outcomes import DeadLetter, Outcome, Release, Retry
from outbox.domain.delivery.retry_policy import RetryPolicy
from outbox.domain.purposes import Purpose
from tests.fakes.clock import EPOCH

POLICY = RetryPolicy()
STEPS = [
    timedelta(seconds=5),
    timedelta(seconds=30),
    timedelta(minutes=2),
    timedelta(minutes=10),
    timedelta(minutes=30),
]
RETRIED = [c for c in FailureClass if c.decision is Decision.RETRY]


def decide(
    failure_class: FailureClass,
    *,
    attempt: int = 1,
    retry_after: datetime | None = None,
    expires_at: datetime | None = None,
    purpose: Purpose = Purpose.SIGN_UP,
    policy: RetryPolicy = POLICY,
) -> Outcome:
    failure = DeliveryFailure(failure_class=failure_class, code="c-1", retry_after=retry_after)
    return policy.decide(
        failure, attempt=attempt, now=EPOCH, expires_at=expires_at, purpose=purpose
    )


def test_defaults_are_five_attempts_over_5s_30s_2min_10min_30min() -> None:
    assert tuple(STEPS) == POLICY.schedule
    assert 5 == POLICY.max_attempts


@pytest.mark.parametrize(("attempt", "step"), list(enumerate(STEPS, start=1)))
def test_backoff_of_attempt_n_is_step_n(attempt: int, step: timedelta) -> None:
    assert step == POLICY.backoff(attempt)


@pytest.mark.parametrize(("attempt", "step"), list(enumerate(STEPS[:4], start=1)))
@pytest.mark.parametrize("failure_class", RETRIED)
def test_a_retryable_failure_of_attempt_n_waits_step_n(
    attempt: int, step: timedelta, failure_class: FailureClass
) -> None:
    assert Retry(available_at=EPOCH + step, failure_class=failure_class, code="c-1") == decide(
        failure_class, attempt=attempt
    )


@pytest.mark.parametrize("failure_class", RETRIED)
def test_the_fifth_failing_attempt_dead_letters_with_its_class(
    failure_class: FailureClass,
) -> None:
    outcome = decide(failure_class, attempt=5)

    assert DeadLetter(reason=failure_class, code="c-1") == outcome
    assert isinstance(outcome, DeadLetter)
    assert outcome.counts_attempt


def test_retryable_classes_are_exactly_the_transient_ones() -> None:
    assert {
        FailureClass.THROTTLED,
        FailureClass.UNAVAILABLE,
        FailureClass.INDETERMINATE,
        FailureClass.LINK_UNCONFIGURED,
        FailureClass.UNEXPECTED_WORKER_ERROR,
    } == set(RETRIED)


def test_schedule_and_cap_are_configurable() -> None:
    policy = RetryPolicy(schedule=[timedelta(seconds=1), timedelta(seconds=2)], max_attempts=4)

    assert Retry(
        available_at=EPOCH + timedelta(seconds=1),
        failure_class=FailureClass.UNAVAILABLE,
        code="c-1",
    ) == decide(FailureClass.UNAVAILABLE, attempt=1, policy=policy)
    assert Retry(
        available_at=EPOCH + timedelta(seconds=2),
        failure_class=FailureClass.UNAVAILABLE,
        code="c-1",
    ) == decide(FailureClass.UNAVAILABLE, attempt=3, policy=policy)
    assert DeadLetter(reason=FailureClass.UNAVAILABLE, code="c-1") == decide(
        FailureClass.UNAVAILABLE, attempt=4, policy=policy
    )


def test_the_last_step_repeats_when_the_cap_outlasts_the_schedule() -> None:
    policy = RetryPolicy(schedule=[timedelta(seconds=1), timedelta(seconds=9)], max_attempts=10)

    assert timedelta(seconds=9) == policy.backoff(7)


def test_a_cap_of_one_dead_letters_the_first_retryable_failure() -> None:
    policy = RetryPolicy(max_attempts=1)

    assert DeadLetter(reason=FailureClass.THROTTLED, code="c-1") == decide(
        FailureClass.THROTTLED, attempt=1, policy=policy
    )


@pytest.mark.parametrize(
    "schedule",
    [[], [timedelta(0)], [timedelta(seconds=5), timedelta(seconds=-1)]],
)
def test_a_schedule_without_positive_steps_is_refused(schedule: list[timedelta]) -> None:
    with pytest.raises(ValueError, match="schedule"):
        RetryPolicy(schedule=schedule)


@pytest.mark.parametrize("cap", [0, -1])
def test_a_cap_below_one_is_refused(cap: int) -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=cap)


def test_a_retry_after_later_than_the_schedule_wins() -> None:
    hint = EPOCH + timedelta(minutes=1)

    assert Retry(available_at=hint, failure_class=FailureClass.THROTTLED, code="c-1") == decide(
        FailureClass.THROTTLED, attempt=1, retry_after=hint
    )


def test_a_retry_after_earlier_than_the_schedule_loses() -> None:
    hint = EPOCH + timedelta(seconds=1)

    assert Retry(
        available_at=EPOCH + timedelta(seconds=30), failure_class=FailureClass.THROTTLED, code="c-1"
    ) == decide(FailureClass.THROTTLED, attempt=2, retry_after=hint)


@pytest.mark.parametrize(
    ("purpose", "reason"),
    [
        (Purpose.SIGN_UP, FailureClass.CHALLENGE_EXPIRED),
        (Purpose.MAGIC_LINK, FailureClass.CHALLENGE_EXPIRED),
        (Purpose.INVITATION, FailureClass.INVITATION_EXPIRED),
    ],
)
@pytest.mark.parametrize("after_expiry", [timedelta(0), timedelta(seconds=1)])
def test_a_retry_time_at_or_after_expiry_dead_letters_now(
    purpose: Purpose, reason: FailureClass, after_expiry: timedelta
) -> None:
    retry_at = EPOCH + timedelta(minutes=10)  # attempt 4 waits 10 minutes

    outcome = decide(
        FailureClass.UNAVAILABLE, attempt=4, expires_at=retry_at - after_expiry, purpose=purpose
    )

    assert DeadLetter(reason=reason, code="c-1") == outcome


def test_a_retry_time_just_before_expiry_is_scheduled() -> None:
    retry_at = EPOCH + timedelta(minutes=10)

    assert Retry(
        available_at=retry_at, failure_class=FailureClass.UNAVAILABLE, code="c-1"
    ) == decide(
        FailureClass.UNAVAILABLE, attempt=4, expires_at=retry_at + timedelta(microseconds=1)
    )


def test_a_retry_after_beyond_expiry_dead_letters_now() -> None:
    outcome = decide(
        FailureClass.THROTTLED,
        attempt=1,
        retry_after=EPOCH + timedelta(minutes=11),
        expires_at=EPOCH + timedelta(minutes=10),
    )

    assert DeadLetter(reason=FailureClass.CHALLENGE_EXPIRED, code="c-1") == outcome


@pytest.mark.parametrize("failure_class", [FailureClass.REJECTED, FailureClass.DECRYPTION_FAILED])
def test_permanent_failures_dead_letter_at_the_first_attempt(failure_class: FailureClass) -> None:
    assert DeadLetter(reason=failure_class, code="c-1") == decide(
        failure_class, attempt=1, retry_after=EPOCH + timedelta(seconds=10)
    )


def test_provider_suspended_releases_at_the_probe_time_without_counting() -> None:
    outcome = decide(FailureClass.PROVIDER_SUSPENDED, attempt=1)

    assert (
        Release(
            available_at=EPOCH + POLICY.suspension_probe,
            failure_class=FailureClass.PROVIDER_SUSPENDED,
            code="c-1",
        )
        == outcome
    )
    assert isinstance(outcome, Release)
    assert not outcome.counts_attempt


def test_provider_suspended_releases_even_at_the_last_attempt() -> None:
    """The attempt is not the message's fault, so the cap does not apply."""
    assert isinstance(decide(FailureClass.PROVIDER_SUSPENDED, attempt=5), Release)


def test_provider_suspended_honours_a_later_retry_after() -> None:
    hint = EPOCH + timedelta(minutes=7)

    outcome = decide(FailureClass.PROVIDER_SUSPENDED, retry_after=hint)

    assert isinstance(outcome, Release)
    assert hint == outcome.available_at


def test_provider_suspended_probe_at_or_after_expiry_dead_letters_without_counting() -> None:
    outcome = decide(
        FailureClass.PROVIDER_SUSPENDED,
        expires_at=EPOCH + POLICY.suspension_probe,
        purpose=Purpose.INVITATION,
    )

    assert (
        DeadLetter(reason=FailureClass.INVITATION_EXPIRED, code="c-1", attempted=False) == outcome
    )


@pytest.mark.parametrize(
    "failure_class", [FailureClass.LINK_UNCONFIGURED, FailureClass.UNEXPECTED_WORKER_ERROR]
)
def test_link_unconfigured_and_unexpected_worker_error_are_retried(
    failure_class: FailureClass,
) -> None:
    assert isinstance(decide(failure_class, attempt=1), Retry)


# --- properties ------------------------------------------------------------------------

schedules = st.lists(
    st.integers(min_value=1, max_value=3600).map(lambda s: timedelta(seconds=s)),
    min_size=1,
    max_size=6,
)
policies = st.builds(
    RetryPolicy, schedule=schedules, max_attempts=st.integers(min_value=1, max_value=8)
)
offsets = st.integers(min_value=-3600, max_value=3 * 3600).map(lambda s: timedelta(seconds=s))


@settings(max_examples=300)
@given(
    policy=policies,
    failure_class=st.sampled_from(FailureClass),
    attempt=st.integers(min_value=1, max_value=10),
    retry_after=st.none() | offsets.map(lambda d: EPOCH + d),
    expires_at=st.none() | offsets.map(lambda d: EPOCH + d),
    purpose=st.sampled_from(Purpose),
)
def test_decide_respects_schedule_retry_after_expiry_and_cap(
    *,
    policy: RetryPolicy,
    failure_class: FailureClass,
    attempt: int,
    retry_after: datetime | None,
    expires_at: datetime | None,
    purpose: Purpose,
) -> None:
    failure = DeliveryFailure(failure_class=failure_class, retry_after=retry_after)
    outcome = policy.decide(
        failure, attempt=attempt, now=EPOCH, expires_at=expires_at, purpose=purpose
    )

    decision = failure_class.decision
    capped = decision is Decision.RETRY and attempt >= policy.max_attempts
    if decision is Decision.DEAD_LETTER or capped:
        assert DeadLetter(reason=failure_class) == outcome
    elif isinstance(outcome, DeadLetter):
        # A retry or release turned terminal only because the message would expire first.
        assert expires_at is not None
        expired = (
            FailureClass.INVITATION_EXPIRED
            if purpose is Purpose.INVITATION
            else FailureClass.CHALLENGE_EXPIRED
        )
        assert expired == outcome.reason
        assert outcome.counts_attempt == (decision is Decision.RETRY)
    else:
        assert isinstance(outcome, Retry if decision is Decision.RETRY else Release)
        assert failure_class == outcome.failure_class
        step = policy.schedule[min(attempt, len(policy.schedule)) - 1]
        floor = step if isinstance(outcome, Retry) else policy.suspension_probe
        assert outcome.available_at >= EPOCH + floor
        if retry_after is not None:
            assert outcome.available_at >= retry_after
        if expires_at is not None:
            assert outcome.available_at < expires_at


@settings(max_examples=200)
@given(policy=policies, classes=st.lists(st.sampled_from(FailureClass), min_size=1, max_size=30))
def test_following_the_policy_never_spends_more_attempts_than_the_cap(
    policy: RetryPolicy, classes: list[FailureClass]
) -> None:
    """Spend attempts as a worker would (attempt = spent + 1) until the outcome is terminal."""
    spent = 0
    for failure_class in classes:
        outcome = policy.decide(
            DeliveryFailure(failure_class=failure_class),
            attempt=spent + 1,
            now=EPOCH,
            expires_at=None,
            purpose=Purpose.NOTIFICATION,
        )
        spent += 1 if outcome.counts_attempt else 0
        assert spent <= policy.max_attempts
        if isinstance(outcome, DeadLetter):
            break
    else:
        assert spent < policy.max_attempts


def _jittered(draw: float, jitter: float = 0.2) -> RetryPolicy:
    return RetryPolicy(jitter=jitter, draw=lambda: draw)


@pytest.mark.parametrize(
    ("draw", "wait"),
    [(0.0, timedelta(seconds=5)), (0.5, timedelta(seconds=5.5)), (0.999, timedelta(seconds=5.999))],
)
def test_jitter_lengthens_a_step_by_up_to_its_share_never_shortens_it(
    draw: float, wait: timedelta
) -> None:
    assert Retry(
        available_at=EPOCH + wait, failure_class=FailureClass.UNAVAILABLE, code="c-1"
    ) == decide(FailureClass.UNAVAILABLE, policy=_jittered(draw))


def test_jitter_applies_to_every_step_of_the_schedule() -> None:
    policy = _jittered(0.5, jitter=0.5)

    assert [step * 1.25 for step in STEPS] == [policy.backoff(n) for n in range(1, 6)]


def test_a_later_retry_after_still_wins_over_a_jittered_step() -> None:
    hint = EPOCH + timedelta(seconds=40)

    outcome = decide(FailureClass.THROTTLED, retry_after=hint, policy=_jittered(0.999))

    assert isinstance(outcome, Retry)
    assert hint == outcome.available_at


def test_a_jittered_retry_after_the_expiry_dead_letters_now() -> None:
    expiry = EPOCH + timedelta(seconds=5.5)

    assert isinstance(
        decide(FailureClass.UNAVAILABLE, expires_at=expiry, policy=_jittered(0.0)), Retry
    )
    assert DeadLetter(reason=FailureClass.CHALLENGE_EXPIRED, code="c-1") == decide(
        FailureClass.UNAVAILABLE, expires_at=expiry, policy=_jittered(0.5)
    )


@pytest.mark.parametrize("jitter", [-0.1, 1.5])
def test_jitter_outside_zero_to_one_is_refused(jitter: float) -> None:
    with pytest.raises(ValueError, match="jitter"):
        RetryPolicy(jitter=jitter, draw=lambda: 0.5)


def test_jitter_without_a_draw_is_refused() -> None:
    with pytest.raises(ValueError, match="draw"):
        RetryPolicy(jitter=0.2)


@given(
    failure_class=st.sampled_from(FailureClass),
    attempt=st.integers(min_value=1, max_value=8),
    hint=st.none() | st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=1)),
)
def test_what_never_expires_is_decided_as_a_message_without_expiry(
    failure_class: FailureClass, attempt: int, hint: timedelta | None
) -> None:
    """``next_attempt`` (a tenant event's decision) is ``decide`` with no expiry to apply."""
    retry_after = EPOCH + hint if hint is not None else None
    failure = DeliveryFailure(failure_class=failure_class, code="c-1", retry_after=retry_after)

    assert decide(failure_class, attempt=attempt, retry_after=retry_after) == (
        POLICY.next_attempt(failure, attempt=attempt, now=EPOCH)
    )
