"""Process one batch of a consumer's deliveries with exactly-once effects.

The claimed deliveries are split into up to ``concurrency`` groups that run side by side. A
group is handled in one transaction on one connection: its handlers run one after another,
each in a savepoint of its own, so a failed handler rolls back only its own writes; then every
attempt of the group (completions, retries, dead letters) is recorded in one statement, and
the transaction commits once. The effects and their completions commit together or not at all.

When the record answers lease_lost for a delivery (another process holds it now), the whole
transaction rolls back, since that delivery's effect is in it, and the others are handled
again in a new one: a rare path, as a lease runs out only past the handlers' deadline or when
an operator cuts it. When the transaction itself fails (a savepoint, the record, the commit),
the group is handled again one delivery per transaction, so a delivery that cannot commit
never holds the others back; a lone delivery's failure is then recorded as its retry in a
short transaction of its own.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from datetime import timedelta

import attrs

from outbox.application.delivery.batch import LATE_RETRY_DELAY, RECORD_SHARE
from outbox.application.events.consumer_handlers import ConsumerRegistry, Reject, RetryAfter
from outbox.application.events.consumer_ports import (
    ClaimedDelivery,
    ConsumerStore,
    DeliveryBatch,
    ProcessingAttempt,
)
from outbox.application.events.errors import ConsumerPaused
from outbox.application.ports import Clock, Telemetry
from outbox.domain.delivery.outcomes import RecordResult
from outbox.domain.delivery.retry_policy import RetryPolicy

NO_HANDLER = "no_handler"
# At most this many deliveries (savepoints) in one transaction. A backend keeps the ids of 64
# subtransactions in shared memory; past that, every other session's snapshot must read
# pg_subtrans, which slows the whole database while the transaction is open.
MAX_GROUP = 64


class _LeaseLost(Exception):
    """Some completions were refused: the whole transaction rolls back."""

    def __init__(self, lost: Sequence[ClaimedDelivery]) -> None:
        super().__init__(len(lost))
        self.lost = lost


class _RolledBack(Exception):
    """Raised out of a handler's savepoint so that its writes roll back."""


@attrs.frozen
class _Handled:
    """A delivery whose handler ran: ``error`` is None when it completed."""

    delivery: ClaimedDelivery
    error: Exception | None


@attrs.define
class _Run:
    """What one transaction over a group got to: whether it opened, the handlers that ran,
    the deliveries too late to start, the attempts it recorded."""

    opened: bool = False
    handled: list[_Handled] = attrs.field(factory=list)
    late: list[ClaimedDelivery] = attrs.field(factory=list)
    attempts: list[ProcessingAttempt] = attrs.field(factory=list)


@attrs.frozen(kw_only=True)
class ProcessingResult:
    """How one batch's deliveries ended."""

    claimed: int = 0
    completed: int = 0
    retried: int = 0
    dead_lettered: int = 0
    lease_lost: int = 0
    unrecorded: int = 0  # recording failed; lease expiry brings these back
    paused: int = 0  # refused because the consumer was paused meanwhile (their leases expire)


@attrs.frozen(kw_only=True)
class ProcessDeliveries:
    """Claims up to ``batch_size`` deliveries of one consumer and handles them.

    ``retry_policy`` gives the wait after a failed attempt (its schedule); the attempt cap is
    the consumer's own, from the database. ``concurrency`` transactions run at once, each over
    a group of the batch (at most ``MAX_GROUP`` deliveries) whose handlers run one after
    another; an ordered consumer's batch holds one delivery per aggregate, so order is kept.
    ``asyncio.CancelledError`` is never swallowed: a cancelled group's leases expire.
    """

    store: ConsumerStore
    registry: ConsumerRegistry
    clock: Clock
    telemetry: Telemetry
    owner: str
    retry_policy: RetryPolicy = attrs.field(factory=RetryPolicy)
    batch_size: int = 50
    lease: timedelta = timedelta(seconds=60)
    concurrency: int = 4

    async def __call__(self, consumer: str) -> ProcessingResult:
        """Process one batch of ``consumer``'s deliveries; an empty result when none is due."""
        # Measured from before the claim, so no handler outlives the lease that allows it.
        deadline = time.monotonic() + self.lease.total_seconds() * (1 - RECORD_SHARE)
        deliveries = await self.store.claim(
            consumer=consumer, owner=self.owner, limit=self.batch_size, lease=self.lease
        )
        if not deliveries:
            return ProcessingResult()
        gate = asyncio.Semaphore(self.concurrency)

        async def run(group: Sequence[ClaimedDelivery]) -> list[str]:
            async with gate:
                return await self._group(consumer, group, deadline)

        groups = await asyncio.gather(*(run(group) for group in self._groups(deliveries)))
        ends = [end for group in groups for end in group]
        return ProcessingResult(
            claimed=len(deliveries),
            completed=ends.count("completed"),
            retried=ends.count("retried"),
            dead_lettered=ends.count("dead_lettered"),
            lease_lost=ends.count("lease_lost"),
            unrecorded=ends.count("unrecorded"),
            paused=ends.count("paused"),
        )

    def _groups(self, deliveries: Sequence[ClaimedDelivery]) -> list[Sequence[ClaimedDelivery]]:
        """The batch in claim order, cut into ``concurrency`` groups of near equal size."""
        size = min(MAX_GROUP, -(-len(deliveries) // max(1, self.concurrency)))
        return [deliveries[start : start + size] for start in range(0, len(deliveries), size)]

    async def _group(
        self, consumer: str, group: Sequence[ClaimedDelivery], deadline: float
    ) -> list[str]:
        """Handle ``group`` in one transaction (again without the deliveries whose lease was
        lost, or one by one when the transaction failed); how each delivery ended."""
        ends: list[str] = []
        todo = list(group)
        while todo:
            run = _Run()
            try:
                await self._transaction(consumer, todo, deadline, run)
            except _LeaseLost as refused:
                ends += self._late(consumer, run.late)
                for delivery in refused.lost:
                    self._report("consumer.lease_lost", "warning", consumer, delivery)
                    ends.append("lease_lost")
                gone = {delivery.event.delivery_id for delivery in refused.lost}
                todo = [
                    done.delivery
                    for done in run.handled
                    if done.delivery.event.delivery_id not in gone
                ]
                self.telemetry.event(
                    "consumer.batch_rolled_back",
                    level="warning",
                    consumer=consumer,
                    reason="lease_lost",
                    lease_lost=len(refused.lost),
                    again=len(todo),
                )
                continue
            except ConsumerPaused:
                ends += self._late(consumer, run.late)
                for done in run.handled:
                    self._report("consumer.paused", "info", consumer, done.delivery)
                    ends.append("paused")
                return ends
            except Exception as error:  # noqa: BLE001 - the transaction failed; never its text
                ends += self._late(consumer, run.late)
                rest = [delivery for delivery in todo if delivery not in run.late]
                return ends + await self._failed_transaction(
                    consumer, rest, error, deadline, opened=run.opened
                )
            ends += self._late(consumer, run.late)
            return ends + [
                self._ended(consumer, done, attempt)
                for done, attempt in zip(run.handled, run.attempts, strict=True)
            ]
        return ends

    async def _transaction(
        self, consumer: str, todo: Sequence[ClaimedDelivery], deadline: float, run: _Run
    ) -> None:
        """One transaction over ``todo``: each handler in its savepoint, then one record of
        every attempt; raises _LeaseLost (so it rolls back) when a completion was refused."""
        async with self.store.batch() as batch:
            run.opened = True
            for delivery in todo:
                left = deadline - time.monotonic()
                if left <= 0:
                    # Too late to start: the lease expires and the delivery is claimed again.
                    run.late.append(delivery)
                    continue
                run.handled.append(await self._handle(consumer, delivery, batch, left))
            run.attempts = [self._attempt(done) for done in run.handled]
            results = await batch.record(run.attempts)
            lost = [
                done.delivery
                for done, result in zip(run.handled, results, strict=True)
                if result is RecordResult.LEASE_LOST
            ]
            if lost:
                raise _LeaseLost(lost)

    async def _handle(
        self, consumer: str, delivery: ClaimedDelivery, batch: DeliveryBatch, within: float
    ) -> _Handled:
        """Run the handler in a savepoint of its own; a failure rolls back its writes only."""
        failure: Exception | None = None
        try:
            async with batch.savepoint():
                try:
                    await self._run(consumer, delivery, batch.handle, within)
                except Exception as error:
                    failure = error
                    raise _RolledBack from error
        except _RolledBack:
            pass
        return _Handled(delivery, failure)

    async def _run(
        self, consumer: str, delivery: ClaimedDelivery, handle: object, within: float
    ) -> None:
        event = delivery.event
        handler = self.registry.handler(consumer, event.event_type, event.contract_version)
        if handler is None:
            raise Reject(NO_HANDLER)
        async with asyncio.timeout(within):
            await handler.handle(event, handle)

    async def _failed_transaction(
        self,
        consumer: str,
        rest: Sequence[ClaimedDelivery],
        error: Exception,
        deadline: float,
        *,
        opened: bool,
    ) -> list[str]:
        """The group's transaction failed. Several deliveries: each again in a transaction of
        its own. One: its attempt fails with ``error``. None opened: the database is out of
        reach, and lease expiry brings them back."""
        if not rest:
            return []
        if not opened:
            for delivery in rest:
                self._report(
                    "consumer.record_failed",
                    "error",
                    consumer,
                    delivery,
                    error_class=type(error).__name__,
                )
            return ["unrecorded"] * len(rest)
        if len(rest) == 1:
            return [await self._failed(consumer, rest[0], error)]
        self.telemetry.event(
            "consumer.batch_rolled_back",
            level="warning",
            consumer=consumer,
            reason="failed",
            error_class=type(error).__name__,
            again=len(rest),
        )
        ends: list[str] = []
        for delivery in rest:
            ends += await self._group(consumer, [delivery], deadline)
        return ends

    async def _failed(self, consumer: str, delivery: ClaimedDelivery, error: Exception) -> str:
        """Record the failure of ``delivery``'s attempt in a short transaction of its own."""
        attempt = self._attempt_after(delivery, error)
        try:
            async with self.store.batch() as batch:
                [result] = await batch.record([attempt])
        except ConsumerPaused:
            self._report("consumer.paused", "info", consumer, delivery)
            return "paused"
        except Exception as record_error:  # noqa: BLE001 - lease expiry takes over
            self._report(
                "consumer.record_failed",
                "error",
                consumer,
                delivery,
                error_class=type(record_error).__name__,
            )
            return "unrecorded"
        if result is RecordResult.LEASE_LOST:
            self._report("consumer.lease_lost", "warning", consumer, delivery)
            return "lease_lost"
        return self._ended(consumer, _Handled(delivery, error), attempt)

    def _late(self, consumer: str, late: Sequence[ClaimedDelivery]) -> list[str]:
        for delivery in late:
            self._report("consumer.lease_running_out", "warning", consumer, delivery)
        return ["lease_lost"] * len(late)

    def _ended(self, consumer: str, done: _Handled, attempt: ProcessingAttempt) -> str:
        """Report a recorded attempt; how its delivery ended."""
        delivery = done.delivery
        if done.error is None:
            self._report("consumer.delivery_completed", "info", consumer, delivery)
            outcome = "completed"
        else:
            dead = attempt.outcome == "dead_letter" or delivery.is_last_attempt
            outcome = "dead_lettered" if dead else "retried"
            self._report(
                f"consumer.delivery_{outcome}",
                "warning",
                consumer,
                delivery,
                error_class=attempt.error_class,
                code=attempt.code,
            )
        self.telemetry.count("outbox_consumer_deliveries_total", consumer=consumer, outcome=outcome)
        return outcome

    def _attempt(self, done: _Handled) -> ProcessingAttempt:
        if done.error is None:
            return ProcessingAttempt.completed(done.delivery)
        return self._attempt_after(done.delivery, done.error)

    def _attempt_after(self, delivery: ClaimedDelivery, error: Exception) -> ProcessingAttempt:
        # Timed when recorded, not when the handler failed: a retry time must be in the future
        # when the batch's record runs, after the handlers that followed.
        event = delivery.event
        if isinstance(error, Reject):
            return ProcessingAttempt(
                delivery_id=event.delivery_id,
                lease_token=delivery.lease_token,
                attempt=event.attempt,
                outcome="dead_letter",
                error_class="Reject",
                code=error.code,
            )
        wait = (
            timedelta(seconds=error.seconds)
            if isinstance(error, RetryAfter)
            else self.retry_policy.backoff(event.attempt)
        )
        return ProcessingAttempt(
            delivery_id=event.delivery_id,
            lease_token=delivery.lease_token,
            attempt=event.attempt,
            outcome="retry",
            error_class=type(error).__name__,
            retry_at=self.clock.now() + max(wait, LATE_RETRY_DELAY),
        )

    def _report(
        self,
        name: str,
        level: str,
        consumer: str,
        delivery: ClaimedDelivery,
        *,
        error_class: str | None = None,
        code: str = "",
    ) -> None:
        event = delivery.event
        self.telemetry.event(
            name,
            level=level,
            consumer=consumer,
            delivery_id=str(event.delivery_id),
            event_type=event.event_type,
            attempt=event.attempt,
            error_class=error_class,
            code=code,
        )
