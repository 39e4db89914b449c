"""The retry policy: how long to wait, when to stop, and when expiry wins."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta

import attrs

from outbox.domain.delivery.failures import Decision, DeliveryFailure
from outbox.domain.delivery.outcomes import DeadLetter, Outcome, Release, Retry, expiry_reason
from outbox.domain.purposes import Purpose

DEFAULT_SCHEDULE = (
    timedelta(seconds=5),
    timedelta(seconds=30),
    timedelta(minutes=2),
    timedelta(minutes=10),
    timedelta(minutes=30),
)
DEFAULT_MAX_ATTEMPTS = 5
DEFAULT_SUSPENSION_PROBE = timedelta(minutes=1)
# Each wait of the schedule is lengthened by up to this share of it, at random, so messages
# that failed together (a provider outage) do not all come back in the same second.
DEFAULT_JITTER = 0.2


def _to_schedule(value: Iterable[timedelta]) -> tuple[timedelta, ...]:
    # A typed converter: with a bare ``converter=tuple`` mypy cannot type the argument.
    return tuple(value)


def _check_schedule(_: object, __: object, value: Sequence[timedelta]) -> None:
    if not value or any(step <= timedelta(0) for step in value):
        raise ValueError("the retry schedule needs at least one positive step")


@attrs.frozen(kw_only=True)
class RetryPolicy:
    """Turns a classified failure of attempt n into the message's next outcome."""

    schedule: tuple[timedelta, ...] = attrs.field(
        default=DEFAULT_SCHEDULE, converter=_to_schedule, validator=_check_schedule
    )
    max_attempts: int = attrs.field(default=DEFAULT_MAX_ATTEMPTS)
    suspension_probe: timedelta = DEFAULT_SUSPENSION_PROBE
    jitter: float = attrs.field(default=0.0)
    # A uniform draw in [0, 1), injected (the domain draws no randomness of its own), so a
    # test can make the jitter exact; required when ``jitter`` is not 0.
    draw: Callable[[], float] | None = attrs.field(default=None, repr=False, eq=False)

    @jitter.validator
    def _check_jitter(self, _: object, value: float) -> None:
        if not 0 <= value <= 1:
            raise ValueError("jitter must be a share of each step, between 0 and 1")

    @draw.validator
    def _check_draw(self, _: object, value: Callable[[], float] | None) -> None:
        if self.jitter and value is None:
            raise ValueError("jitter needs a draw, a source of uniform numbers in [0, 1)")

    @max_attempts.validator
    def _check_max_attempts(self, _: object, value: int) -> None:
        if value < 1:
            raise ValueError("max_attempts must be at least 1")

    def backoff(self, attempt: int) -> timedelta:
        """The wait after a retryable failure of attempt number ``attempt``; last step repeats.

        The step of the schedule, lengthened by up to ``jitter`` of itself at random: never
        shorter than the schedule.
        """
        step = self.schedule[min(attempt, len(self.schedule)) - 1]
        if not self.jitter or self.draw is None:
            return step
        return step * (1 + self.jitter * self.draw())

    def decide(
        self,
        failure: DeliveryFailure,
        *,
        attempt: int,
        now: datetime,
        expires_at: datetime | None,
        purpose: Purpose,
    ) -> Outcome:
        """Decide the outcome of a failed attempt number ``attempt`` (1-based).

        The retry time is the later of the schedule and the provider's Retry-After; a
        failure of the last allowed attempt, a permanent failure, or a retry time after
        the message's expiry dead-letters now.
        """
        outcome = self.next_attempt(failure, attempt=attempt, now=now)
        match outcome:
            case Retry(available_at=at) | Release(available_at=at) if (
                expires_at is not None and at >= expires_at
            ):
                return DeadLetter(
                    reason=expiry_reason(purpose),
                    code=failure.code,
                    detail=failure.detail,
                    attempted=isinstance(outcome, Retry),
                )
            case _:
                return outcome

    def next_attempt(self, failure: DeliveryFailure, *, attempt: int, now: datetime) -> Outcome:
        """Decide a failed attempt number ``attempt`` (1-based) of something that never expires.

        What ``decide`` does before expiry is considered: a permanent failure or a failure
        of the last allowed attempt dead-letters, a suspension releases until the probe, and
        otherwise the retry waits the later of the schedule and the Retry-After hint. A
        tenant event has no expiry, so its worker asks this directly.
        """
        decision = failure.failure_class.decision
        if decision is Decision.DEAD_LETTER or (
            decision is Decision.RETRY and attempt >= self.max_attempts
        ):
            return DeadLetter(
                reason=failure.failure_class, code=failure.code, detail=failure.detail
            )
        if decision is Decision.RELEASE:
            probe = now + self.suspension_probe
            at = max(probe, failure.retry_after) if failure.retry_after else probe
            return Release(
                available_at=at,
                failure_class=failure.failure_class,
                code=failure.code,
                detail=failure.detail,
            )
        at = now + self.backoff(attempt)
        if failure.retry_after is not None and failure.retry_after > at:
            at = failure.retry_after
        return Retry(
            available_at=at,
            failure_class=failure.failure_class,
            code=failure.code,
            detail=failure.detail,
        )
