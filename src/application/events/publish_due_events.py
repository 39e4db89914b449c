"""Publish one batch of tenant events: claim, offer to every target, record.

The internal consumers are no target here: the database writes their deliveries in the
transaction that records an event published. With no target configured (the
broker relay is optional) every claimed event is therefore published at once.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta

import attrs

from outbox.application.delivery.batch import (
    LEVELS,
    BatchLog,
    BatchTally,
    describe,
    not_in_the_past,
    record_batch,
    run_deadline,
)
from outbox.application.delivery.provider_breaker import ProviderBreaker
from outbox.application.events.ports import (
    ClaimedEvent,
    EventOutboxStore,
    PublicationRecord,
    PublicationTarget,
    TargetRefusal,
)
from outbox.application.ports import Clock, Telemetry
from outbox.domain.delivery.failures import DeliveryFailure, FailureClass
from outbox.domain.delivery.outcomes import (
    Outcome,
    Published,
    RecordResult,
)
from outbox.domain.delivery.retry_after import MAX_RETRY_AFTER
from outbox.domain.delivery.retry_policy import RetryPolicy

_LOG = BatchLog(
    done="event_batch.published", record_failed="event_outcome.record_failed", unit="events"
)
TIMEOUT_CODE = "timeout"
# What a target may say of an event (the provider taxonomy); any other class is a target's
# bug, recorded as an unexpected error naming the class, which the attempt history accepts.
TARGET_CLASSES = frozenset(
    {
        FailureClass.REJECTED,
        FailureClass.THROTTLED,
        FailureClass.UNAVAILABLE,
        FailureClass.INDETERMINATE,
        FailureClass.PROVIDER_SUSPENDED,
    }
)


@attrs.frozen(kw_only=True)
class _Refused:
    """Why one event is not published this time: the target that said no, and how."""

    target: str
    failure: DeliveryFailure


class _Unstarted:
    """The lease ran out before the event could be offered: no record, its lease expires."""


_UNSTARTED = _Unstarted()


@attrs.frozen(kw_only=True)
class PublishDueEvents:
    """Claims a batch of due events and publishes each one to every configured target.

    An event is recorded published only when every target accepted it; a refusal is a
    failed attempt decided by the retry policy (the retry schedule, the later of it and the
    target's Retry-After, a dead letter at the cap, which parks the aggregate's later
    events). A target that raises costs the events it was given one counted
    ``unexpected_worker_error`` attempt, and its exception text is never kept.

    A target that cannot be reached at all (the broker is down: it answers
    ``provider_suspended`` for every event) is treated like a suspended provider: its events
    are released without spending an attempt, and ``breaker`` pauses the lane for the retry
    policy's probe interval; then one event is claimed as a probe, and the first one a
    target accepts resumes the lane. An outage of any length therefore dead-letters and
    parks nothing. It is said once when it starts (``relay.target_suspended``, warning) and
    once when it ends (``relay.target_resumed``), and gauged while it lasts
    (``outbox_relay_target_suspended``).

    The targets are asked one after another (an event refused by one is not offered to the
    next: it will be offered to all again), each in up to ``concurrency`` calls at once over
    slices of the batch. No publication outlives the lease: every call's timeout is cut to
    the batch's deadline (the lease less a tenth kept for recording), and a call that can no
    longer start in time is not made (its events are not recorded; their leases run out and
    they are claimed again). ``asyncio.CancelledError`` is never swallowed.
    """

    store: EventOutboxStore
    targets: Sequence[PublicationTarget]
    clock: Clock
    telemetry: Telemetry
    policy: RetryPolicy
    owner: str
    batch_size: int = 100
    concurrency: int = 4
    lease: timedelta = timedelta(seconds=60)
    target_timeout: timedelta = timedelta(seconds=10)
    breaker: ProviderBreaker = attrs.field(factory=ProviderBreaker)

    async def __call__(self) -> BatchTally:
        """Publish one batch and return what happened to it.

        Raises StoreUnavailable when the claim cannot reach the database.
        """
        now = self.clock.now()
        if any(self.breaker.admit(target.name, now) is not None for target in self.targets):
            return BatchTally()  # a target is down and its probe is not due: claim nothing
        paused = self.breaker.paused()
        probing = [target.name for target in self.targets if target.name in paused]
        # The lease starts on the database's clock after this moment, so it outlives this bound.
        deadline = run_deadline(now, self.lease)
        limit = 1 if probing else self.batch_size
        started = time.perf_counter()
        claimed = await self.store.claim(owner=self.owner, limit=limit, lease=self.lease)
        # Every claim, empty ones too, as the security lane's: a claim slowed by dead versions
        # is slow when it finds nothing as well (the held-horizon benchmark reads this).
        self.telemetry.observe("outbox_event_claim_seconds", time.perf_counter() - started)
        if not claimed:
            for name in probing:
                self.breaker.settle(name)  # nothing to probe with: probe on the next turn
            return BatchTally()
        self.telemetry.observe("outbox_event_claim_batch_size", len(claimed))
        verdicts: list[_Refused | _Unstarted | None] = [None] * len(claimed)
        for target in self.targets:
            await self._offer(target, claimed, verdicts, deadline)
        return await self._record(claimed, verdicts)

    def _watch(
        self, target: PublicationTarget, answers: Sequence[_Refused | _Unstarted | None]
    ) -> None:
        """Trip the breaker when ``target`` could not be reached for any event it was
        offered; reset it on the first accepted one."""
        if any(answer is None for answer in answers):
            if self.breaker.succeed(target.name):
                self.telemetry.event("relay.target_resumed", target=target.name)
                self.telemetry.observe("outbox_relay_target_suspended", 0, target=target.name)
            return
        refusals = [answer for answer in answers if isinstance(answer, _Refused)]
        if refusals and all(_suspended(refusal) for refusal in refusals):
            until = self.clock.now() + self.policy.suspension_probe
            if self.breaker.trip(target.name, until):
                self.telemetry.event(
                    "relay.target_suspended",
                    level="warning",
                    target=target.name,
                    code=refusals[0].failure.code,
                    probe_seconds=self.policy.suspension_probe.total_seconds(),
                )
                self.telemetry.observe("outbox_relay_target_suspended", 1, target=target.name)
            return
        self.breaker.settle(target.name)

    async def _offer(
        self,
        target: PublicationTarget,
        claimed: Sequence[ClaimedEvent],
        verdicts: list[_Refused | _Unstarted | None],
        deadline: datetime,
    ) -> None:
        """Offer ``target`` every event no earlier target refused; note its refusals."""
        open_ = [index for index, verdict in enumerate(verdicts) if verdict is None]
        if not open_:
            return
        size = math.ceil(len(open_) / max(1, self.concurrency))
        slices = [open_[start : start + size] for start in range(0, len(open_), size)]
        answers = await asyncio.gather(
            *(self._call(target, [claimed[i] for i in part], deadline) for part in slices)
        )
        for part, answer in zip(slices, answers, strict=True):
            for index, verdict in zip(part, answer, strict=True):
                verdicts[index] = verdict
        self._watch(target, [verdicts[index] for index in open_])

    async def _call(
        self, target: PublicationTarget, events: Sequence[ClaimedEvent], deadline: datetime
    ) -> list[_Refused | _Unstarted | None]:
        """One publish call: an answer per event (None when accepted)."""
        left = (deadline - self.clock.now()).total_seconds()
        if left <= 0:
            self.telemetry.event(
                "event.lease_running_out", level="warning", target=target.name, events=len(events)
            )
            return [_UNSTARTED] * len(events)
        started = time.perf_counter()
        try:
            async with asyncio.timeout(min(self.target_timeout.total_seconds(), left)):
                answers = await _answers(target, events)
        except TimeoutError:
            failure = DeliveryFailure(failure_class=FailureClass.INDETERMINATE, code=TIMEOUT_CODE)
            return [_Refused(target=target.name, failure=failure)] * len(events)
        except Exception as error:  # noqa: BLE001 - one target's bug must never stop the worker
            self.telemetry.event(
                "event.unexpected_error",
                level="error",
                target=target.name,
                events=len(events),
                error=type(error).__name__,
            )
            failure = DeliveryFailure(
                failure_class=FailureClass.UNEXPECTED_WORKER_ERROR, code=type(error).__name__
            )
            return [_Refused(target=target.name, failure=failure)] * len(events)
        finally:
            self.telemetry.observe(
                "outbox_event_publish_seconds", time.perf_counter() - started, target=target.name
            )
        now = self.clock.now()
        return [
            None if answer is None else _Refused(target=target.name, failure=_failure(answer, now))
            for answer in answers
        ]

    def _outcome(self, event: ClaimedEvent, verdict: _Refused | None) -> Outcome:
        if verdict is None:
            return Published()
        self.telemetry.event(
            "event.publish_failed",
            # A target that is down is said once, by relay.target_suspended.
            level="debug" if _suspended(verdict) else "warning",
            record_id=str(event.record_id),
            event_id=str(event.event_id),
            organization_id=str(event.organization_id),
            event_type=event.event_type,
            target=verdict.target,
            failure_class=verdict.failure.failure_class.value,
            code=verdict.failure.code,
            attempt=event.attempts + 1,
        )
        return self.policy.next_attempt(
            verdict.failure, attempt=event.attempts + 1, now=self.clock.now()
        )

    async def _record(
        self, batch: Sequence[ClaimedEvent], verdicts: Sequence[_Refused | _Unstarted | None]
    ) -> BatchTally:
        now = self.clock.now()
        pairs = [
            (event, self._record_of(event, verdict, now))
            for event, verdict in zip(batch, verdicts, strict=True)
            if not isinstance(verdict, _Unstarted)
        ]
        totals, kinds = await record_batch(
            [record for _, record in pairs],
            claimed=len(batch),
            unstarted=len(batch) - len(pairs),
            record=self.store.record,
            report=lambda index, result: self._report(*pairs[index], result),
            telemetry=self.telemetry,
            log=_LOG,
            level="debug" if verdicts and all(_is_suspension(v) for v in verdicts) else "info",
        )
        # Counters once per outcome and batch, not once per event.
        for kind, count in Counter(kind for kind, _ in kinds).items():
            self.telemetry.count("outbox_event_publications_total", count, outcome=kind)
        return totals

    def _record_of(
        self, event: ClaimedEvent, verdict: _Refused | None, now: datetime
    ) -> PublicationRecord:
        outcome = not_in_the_past(self._outcome(event, verdict), now)
        return PublicationRecord(
            record_id=event.record_id,
            lease_token=event.lease_token,
            attempt=event.attempts + 1,
            outcome=outcome,
            target=verdict.target if verdict is not None else "",
        )

    def _report(
        self, event: ClaimedEvent, record: PublicationRecord, result: RecordResult
    ) -> tuple[str, str]:
        if result is RecordResult.LEASE_LOST:
            self.telemetry.event(
                "event.lease_lost",
                level="warning",
                record_id=str(event.record_id),
                event_id=str(event.event_id),
                organization_id=str(event.organization_id),
            )
            return "lease_lost", ""
        kind, failure_class = describe(record.outcome)
        suspended = failure_class == FailureClass.PROVIDER_SUSPENDED.value
        self.telemetry.event(
            f"event.{kind}",
            level="debug" if suspended else LEVELS[kind],
            record_id=str(event.record_id),
            event_id=str(event.event_id),
            organization_id=str(event.organization_id),
            event_type=event.event_type,
            attempt=record.attempt,
            target=record.target or None,
            failure_class=failure_class or None,
        )
        return kind, failure_class


def _suspended(refusal: _Refused) -> bool:
    return refusal.failure.failure_class is FailureClass.PROVIDER_SUSPENDED


def _is_suspension(verdict: _Refused | _Unstarted | None) -> bool:
    return isinstance(verdict, _Refused) and _suspended(verdict)


class _AnswerCountMismatch(Exception):
    """A target answered for more or fewer events than it was given (a bug in the target)."""


async def _answers(
    target: PublicationTarget, events: Sequence[ClaimedEvent]
) -> Sequence[TargetRefusal | None]:
    answers = await target.publish(events)
    if len(answers) != len(events):
        raise _AnswerCountMismatch
    return answers


def _failure(refusal: TargetRefusal, now: datetime) -> DeliveryFailure:
    """The refusal as the retry policy reads it; an absurd Retry-After falls back to schedule."""
    if refusal.failure_class not in TARGET_CLASSES:
        return DeliveryFailure(
            failure_class=FailureClass.UNEXPECTED_WORKER_ERROR, code=refusal.failure_class.value
        )
    hint = refusal.retry_after
    usable = hint is not None and timedelta(0) < hint <= MAX_RETRY_AFTER
    return DeliveryFailure(
        failure_class=refusal.failure_class,
        code=refusal.code,
        retry_after=now + hint if usable and hint is not None else None,
    )
