"""Dispatch one batch: claim, open, render, send, classify, record."""

from __future__ import annotations

import asyncio
import math
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

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
from outbox.application.delivery.errors import (
    DeliveryFailed,
    TemplateNotFound,
    TemplateRenderFailed,
)
from outbox.application.delivery.links import LinkBases, link_with_token
from outbox.application.delivery.ports import (
    AttemptRecord,
    ClaimedMessage,
    Delivery,
    DeliveryProvider,
    DispatchStore,
    RenderedMessage,
    Renderer,
    SendRateLimit,
)
from outbox.application.delivery.provider_breaker import ProviderBreaker
from outbox.application.delivery.provider_pauses import ProviderPauseBoard
from outbox.application.errors import EnvelopeInvalid
from outbox.application.ports import Clock, Sealer, Telemetry
from outbox.domain.channels import Channel
from outbox.domain.delivery.failures import DeliveryFailure, FailureClass
from outbox.domain.delivery.outcomes import (
    DeadLetter,
    Outcome,
    Published,
    RecordResult,
    Release,
    expiry_reason,
)
from outbox.domain.delivery.retry_policy import RetryPolicy
from outbox.domain.destinations import mask

NO_PROVIDER = "no_provider"
# The reserved slot's batch: codes arrive one by one; a small batch is sent and recorded at once.
RESERVED_BATCH = 10
_LOG = BatchLog(done="batch.dispatched", record_failed="outcome.record_failed", unit="messages")
_TIMED_OUT = DeliveryFailure(failure_class=FailureClass.INDETERMINATE, code="timeout")


class _LeaseRunningOut(Exception):
    """The lease ends before a send could finish and be recorded: do not start it."""


PAUSED_BY_OPERATOR = "paused_by_operator"  # the code of a release for a paused provider


class _SendTimer:
    """Bounds every send of one batch with a single event-loop timer.

    What ``asyncio.timeout`` around each send did, for a timer per batch instead of one
    per send (docs/benchmarks.md): each sender says when its current send must end
    (``start``) and that it ended (``stop``). The one timer fires at the earliest deadline
    it knows, cancels every sender whose send is past its own deadline, and re-arms for the
    next one. Sends of one sender follow each other, so their deadlines only grow and the
    timer is rarely moved. A send the timer cancelled ends in ``TimeoutError``, unless
    someone else cancelled the sender too (that cancellation goes on, as with
    ``asyncio.timeout``).
    """

    __slots__ = ("_at", "_expired", "_handle", "_loop", "_sends")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._sends: dict[asyncio.Task[Any], float] = {}  # sender → its send's deadline
        self._expired: set[asyncio.Task[Any]] = set()
        self._handle: asyncio.TimerHandle | None = None
        self._at = math.inf

    def start(self, task: asyncio.Task[Any], seconds: float) -> None:
        """``task`` starts a send that must end within ``seconds``."""
        deadline = self._loop.time() + seconds
        self._sends[task] = deadline
        if deadline < self._at:
            self._arm(deadline)

    def stop(self, task: asyncio.Task[Any]) -> bool:
        """``task``'s send ended; whether the timer cancelled it."""
        del self._sends[task]
        if task in self._expired:
            self._expired.discard(task)
            return True
        return False

    def close(self) -> None:
        """The batch's sends are over: drop the timer."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _arm(self, at: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._at = at
        self._handle = self._loop.call_at(at, self._fire)

    def _fire(self) -> None:
        self._handle, self._at = None, math.inf
        now = self._loop.time()
        for task, deadline in self._sends.items():
            if deadline <= now and task not in self._expired:
                self._expired.add(task)
                task.cancel()
        later = [d for t, d in self._sends.items() if t not in self._expired]
        if later:
            self._arm(min(later))


@attrs.frozen(kw_only=True)
class _Send:
    """What every send of one sender shares: the batch's send deadline, its timer, the task."""

    deadline: datetime
    timer: _SendTimer
    task: asyncio.Task[Any]


@attrs.frozen(kw_only=True)
class DispatchDueMessages:
    """Claims a batch of due messages and delivers each one, concurrently up to a bound.

    One message's failure never stops the batch; ``asyncio.CancelledError`` is never
    swallowed (a cancelled batch records nothing and its leases expire).

    No send outlives the lease that allows it: the batch's sends must end by its send
    deadline (the lease, counted from before the claim, less a tenth kept for recording), so
    each send's timeout is cut to what is left, and a send that can no longer start in
    time is not started at all (the message is neither sent nor recorded; its lease runs
    out and it is claimed again). A worker that was frozen past its lease therefore wakes
    up to a batch it no longer sends, and a batch too big for its lease records what it
    did in time instead of losing every result to an expired lease.
    """

    store: DispatchStore
    sealer: Sealer
    renderer: Renderer
    providers: Mapping[Channel, DeliveryProvider]
    clock: Clock
    telemetry: Telemetry
    policy: RetryPolicy
    breaker: ProviderBreaker
    links: LinkBases
    owner: str
    batch_size: int = 100
    concurrency: int = 32
    lease: timedelta = timedelta(seconds=60)
    provider_timeout: timedelta = timedelta(seconds=10)
    # Provider name → its send quota; a provider without one sends as fast as it is given work.
    rate_limits: Mapping[str, SendRateLimit] = attrs.field(factory=dict)
    # Providers staff paused for every worker (None: no pauses are read).
    pauses: ProviderPauseBoard | None = None
    # Claim high-priority messages only: the worker's reserved slot, so a code never waits
    # behind a batch of notifications already in flight (``reserved_slot``).
    urgent: bool = False
    # The batches' side of a reserved slot running in another process: a high-priority
    # message due for less than this is left to the slot; one due for longer is anybody's,
    # so a code is never stranded behind a slot that is down or behind (``leaving_urgent``).
    leave_urgent: timedelta = timedelta(0)

    def reserved_slot(self) -> DispatchDueMessages:
        """The same dispatch for the reserved slot: high priority only, in small batches."""
        return attrs.evolve(
            self,
            urgent=True,
            batch_size=min(self.batch_size, RESERVED_BATCH),
            concurrency=min(self.concurrency, RESERVED_BATCH),
        )

    def urgent_only(self) -> DispatchDueMessages:
        """The reserved slot with a process of its own: high priority only, at the lane's
        size. Small batches keep the slot beside the lane's batches light; alone, with the
        batches leaving it every fresh code, it must keep up with the codes by itself."""
        return attrs.evolve(self, urgent=True)

    def leaving_urgent(self, grace: timedelta) -> DispatchDueMessages:
        """The same dispatch for batches whose reserved slot runs elsewhere: each leaves a
        fresh high-priority message to the slot for ``grace``."""
        return attrs.evolve(self, leave_urgent=grace)

    async def __call__(self) -> BatchTally:
        """Dispatch one batch and return what happened to it.

        Raises StoreUnavailable when the claim cannot reach the database.
        """
        # The lease starts on the database's clock after this moment, so it outlives this bound.
        deadline = run_deadline(self.clock.now(), self.lease)
        started = time.perf_counter()
        claimed = await self.store.claim(
            owner=self.owner,
            limit=self.batch_size,
            lease=self.lease,
            urgent=self.urgent,
            leave_urgent=self.leave_urgent,
        )
        # Every claim, empty ones too: a claim slowed by dead versions is slow when it finds
        # nothing as well (the held-horizon benchmark reads this).
        self.telemetry.observe("outbox_claim_seconds", time.perf_counter() - started)
        if not claimed:
            return BatchTally()
        if self.pauses is not None:
            await self.pauses.refresh_if_due(self.clock.now())
        self.telemetry.observe("outbox_claim_batch_size", len(claimed))
        records = await self._deliver_all(claimed, deadline)
        return await self._record(claimed, records)

    async def _deliver_all(
        self, claimed: Sequence[ClaimedMessage], deadline: datetime
    ) -> list[AttemptRecord | None]:
        # ``concurrency`` senders take the next message in claim order until none is left:
        # the same bound as a semaphore over one task per message, for a third of the tasks
        # and no semaphore (docs/benchmarks.md).
        results: list[AttemptRecord | None] = [None] * len(claimed)
        pending = iter(enumerate(claimed))
        timer = _SendTimer(asyncio.get_running_loop())

        async def sender() -> None:
            task = asyncio.current_task()
            if task is None:  # never: gather runs each sender as a task
                raise RuntimeError("a sender runs outside a task")
            send = _Send(deadline=deadline, timer=timer, task=task)
            for index, message in pending:
                results[index] = await self._deliver(message, send)

        try:
            await asyncio.gather(*(sender() for _ in range(min(self.concurrency, len(claimed)))))
        finally:
            timer.close()
        return results

    async def _deliver(self, message: ClaimedMessage, send: _Send) -> AttemptRecord | None:
        """The outcome to record for ``message``, or None when its lease ran out unsent."""
        provider = self.providers.get(message.channel)
        provider_name = provider.name if provider is not None else NO_PROVIDER
        try:
            outcome = await self._attempt(message, provider, send)
        except _LeaseRunningOut:
            self.breaker.settle(provider_name)  # if it was to be a probe, it never went out
            self.telemetry.event(
                "delivery.lease_running_out",
                level="warning",
                message_id=str(message.id),
                purpose=message.purpose.value,
                provider=provider_name,
            )
            return None
        except Exception as error:  # noqa: BLE001 - one message must never stop the batch
            self.breaker.settle(provider_name)
            self.telemetry.event(
                "delivery.unexpected_error",
                level="error",
                message_id=str(message.id),
                purpose=message.purpose.value,
                provider=provider_name,
                error=type(error).__name__,
            )
            outcome = self._decide(
                message,
                DeliveryFailure(
                    failure_class=FailureClass.UNEXPECTED_WORKER_ERROR, code=type(error).__name__
                ),
            )
        return AttemptRecord(
            message_id=message.id,
            lease_token=message.lease_token,
            attempt=message.attempts + 1,
            outcome=outcome,
            provider=provider_name,
        )

    async def _attempt(
        self, message: ClaimedMessage, provider: DeliveryProvider | None, send: _Send
    ) -> Outcome:
        early = self._before_send(message, provider, self.clock.now())
        if early is not None or provider is None:
            return early or DeadLetter(reason=FailureClass.REJECTED, code=NO_PROVIDER)
        content = self._content(message)
        if isinstance(content, DeadLetter):
            self.breaker.settle(provider.name)
            return content
        delivery = Delivery(
            message_id=message.id,
            channel=message.channel,
            destination=message.destination,
            content=content,
        )
        return await self._send(message, provider, delivery, send)

    def _before_send(
        self, message: ClaimedMessage, provider: DeliveryProvider | None, now: datetime
    ) -> Outcome | None:
        """The outcomes decided without opening the secret or calling the provider."""
        if message.expires_at is not None and message.expires_at <= now:
            return DeadLetter(reason=expiry_reason(message.purpose), attempted=False)  # never sent
        if provider is None:
            return None
        if self.pauses is not None and self.pauses.is_paused(provider.name):
            # Paused by staff: back to pending, no attempt spent, no probe; looked at again
            # soon, so a resume lets it go within ``release_for``.
            return Release(
                available_at=now + self.pauses.release_for,
                failure_class=FailureClass.PROVIDER_SUSPENDED,
                code=PAUSED_BY_OPERATOR,
            )
        retry_at = self.breaker.admit(provider.name, now)
        if retry_at is not None:
            failure = DeliveryFailure(
                failure_class=FailureClass.PROVIDER_SUSPENDED, code="paused", retry_after=retry_at
            )
            return self._decide(message, failure)
        if message.purpose.renders_link and self.links.base_for(message.purpose) is None:
            self.breaker.settle(provider.name)  # no link base: the token is never opened
            return self._decide(
                message, DeliveryFailure(failure_class=FailureClass.LINK_UNCONFIGURED)
            )
        return None

    def _content(self, message: ClaimedMessage) -> RenderedMessage | DeadLetter:
        """Open the secret and render; a dead letter when either can never succeed."""
        secret = self._open(message)
        if isinstance(secret, DeadLetter):
            return secret
        link_base = self.links.base_for(message.purpose)
        try:
            return self.renderer.render(
                template=message.template,
                channel=message.channel,
                locale=message.locale,
                params=message.params,
                secret=None if link_base else secret,
                link=link_with_token(link_base, secret) if link_base and secret else None,
            )
        except (TemplateNotFound, TemplateRenderFailed) as error:
            # The same row renders the same way every time: waiting cannot fix it.
            return DeadLetter(reason=FailureClass.REJECTED, code=_snake(type(error).__name__))

    def _open(self, message: ClaimedMessage) -> str | DeadLetter | None:
        if not message.purpose.carries_secret:
            return None
        try:
            return self.sealer.open(
                message_id=message.id, purpose=message.purpose, envelope=message.envelope or ""
            )
        except EnvelopeInvalid:
            # A secret that does not open never will: no retry, and security monitoring hears of it.
            self.telemetry.event(
                "security.decryption_failed",
                level="critical",
                message_id=str(message.id),
                purpose=message.purpose.value,
            )
            return DeadLetter(reason=FailureClass.DECRYPTION_FAILED)

    async def _send(
        self,
        message: ClaimedMessage,
        provider: DeliveryProvider,
        delivery: Delivery,
        send: _Send,
    ) -> Outcome:
        if provider.name in self.rate_limits:
            left = await self._room_to_send(provider, send.deadline)
        else:
            left = self._time_left(send.deadline)
        task, timer = send.task, send.timer
        cancelling = task.cancelling()
        started = time.perf_counter()
        timer.start(task, min(self.provider_timeout.total_seconds(), left))
        timed_out = False
        try:
            try:  # the timer cancels this task if the send outlives its deadline
                receipt = await provider.send(delivery)
            finally:
                # As asyncio.timeout does: the cancellation was ours alone if no other came.
                timed_out = timer.stop(task) and task.uncancel() <= cancelling
        except DeliveryFailed as failed:
            return self._failed(message, provider, failed.failure)
        except asyncio.CancelledError:
            if not timed_out:
                raise
            return self._failed(message, provider, _TIMED_OUT)
        except TimeoutError:  # the provider's own client gave up first
            return self._failed(message, provider, _TIMED_OUT)
        finally:
            self.telemetry.observe(
                "outbox_send_seconds", time.perf_counter() - started, provider=provider.name
            )
        if self.breaker.succeed(provider.name):
            self.telemetry.event("provider.resumed", level="warning", provider=provider.name)
        return Published(provider_message_id=receipt)

    async def _room_to_send(self, provider: DeliveryProvider, deadline: datetime) -> float:
        """Seconds left for the send once the provider's quota has room for it.

        Waiting for the quota counts against the lease: a send that cannot start before the
        deadline is not started (the message is claimed again once its lease runs out).
        """
        left = (deadline - self.clock.now()).total_seconds()
        limit = self.rate_limits.get(provider.name)
        if limit is not None and left > 0:
            try:
                async with asyncio.timeout(left):
                    await limit.acquire()
            except TimeoutError:
                raise _LeaseRunningOut from None
            left = (deadline - self.clock.now()).total_seconds()
        if left <= 0:
            raise _LeaseRunningOut
        return left

    def _time_left(self, deadline: datetime) -> float:
        """Seconds left for a send without a quota; raises _LeaseRunningOut when none is."""
        left = (deadline - self.clock.now()).total_seconds()
        if left <= 0:
            raise _LeaseRunningOut
        return left

    def _failed(
        self, message: ClaimedMessage, provider: DeliveryProvider, failure: DeliveryFailure
    ) -> Outcome:
        outcome = self._decide(message, failure)
        if failure.failure_class is FailureClass.PROVIDER_SUSPENDED and isinstance(
            outcome, Release
        ):
            if self.breaker.trip(provider.name, outcome.available_at):
                self.telemetry.event(
                    "provider.suspended",
                    level="critical",
                    provider=provider.name,
                    code=failure.code,
                    probe_at=outcome.available_at.isoformat(),
                )
        else:
            self.breaker.settle(provider.name)
        self.telemetry.event(
            "delivery.failed",
            level="warning",
            message_id=str(message.id),
            purpose=message.purpose.value,
            provider=provider.name,
            destination=mask(message.destination),
            failure_class=failure.failure_class.value,
            code=failure.code,
            attempt=message.attempts + 1,
        )
        return outcome

    def _decide(self, message: ClaimedMessage, failure: DeliveryFailure) -> Outcome:
        return self.policy.decide(
            failure,
            attempt=message.attempts + 1,
            now=self.clock.now(),
            expires_at=message.expires_at,
            purpose=message.purpose,
        )

    async def _record(
        self, batch: Sequence[ClaimedMessage], outcomes: list[AttemptRecord | None]
    ) -> BatchTally:
        now = self.clock.now()
        pairs = [
            (message, _not_in_the_past(record, now))
            for message, record in zip(batch, outcomes, strict=True)
            if record is not None
        ]
        records = [record for _, record in pairs]
        totals, kinds = await record_batch(
            records,
            claimed=len(batch),
            unstarted=len(batch) - len(pairs),
            record=self.store.record,
            report=lambda index, result: self._report(*pairs[index], result),
            telemetry=self.telemetry,
            log=_LOG,
        )
        attempts: Counter[tuple[str, str, str]] = Counter(
            (record.provider, kind, failure_class)
            for record, (kind, failure_class) in zip(records, kinds, strict=False)
            if kind != "lease_lost"
        )
        # Counters once per label set and batch, not once per message (docs/benchmarks.md).
        for (provider, kind, failure_class), count in attempts.items():
            self.telemetry.count(
                "outbox_attempts_total",
                count,
                provider=provider,
                outcome=kind,
                failure_class=failure_class,
            )
        return totals

    def _report(
        self, message: ClaimedMessage, record: AttemptRecord, result: RecordResult
    ) -> tuple[str, str]:
        outcome = record.outcome
        if result is RecordResult.LEASE_LOST:
            self.telemetry.event(
                "outcome.lease_lost",
                level="warning",
                message_id=str(message.id),
                purpose=message.purpose.value,
            )
            return "lease_lost", ""
        kind, failure_class = describe(outcome)
        available_at = None if isinstance(outcome, Published | DeadLetter) else outcome.available_at
        self.telemetry.event(
            f"message.{kind}",
            level=LEVELS[kind],
            message_id=str(message.id),
            purpose=message.purpose.value,
            channel=message.channel.value,
            provider=record.provider,
            attempt=record.attempt,
            failure_class=failure_class or None,
            available_at=available_at.isoformat() if available_at else None,
        )
        return kind, failure_class


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


def _not_in_the_past(record: AttemptRecord, now: datetime) -> AttemptRecord:
    """``record``, its outcome moved just ahead of ``now`` if its time passed (a new record
    only then: this runs once per message)."""
    outcome = not_in_the_past(record.outcome, now)
    return record if outcome is record.outcome else attrs.evolve(record, outcome=outcome)
