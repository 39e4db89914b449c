"""Process one batch of a consumer's deliveries with exactly-once effects.

Each delivery gets a transaction of its own: the handler writes through it and the completion
is recorded in it, so the effect and the completion commit together or not at all. A
completion that lost its lease (another process holds the delivery now) rolls the effect back.
A failed handler's transaction is rolled back first; its retry or dead letter is then
recorded in a short transaction of its own.
"""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import attrs

from outbox.application.delivery.batch import LATE_RETRY_DELAY, RECORD_SHARE
from outbox.application.events.consumer_handlers import ConsumerRegistry, Reject, RetryAfter
from outbox.application.events.consumer_ports import (
    ClaimedDelivery,
    ConsumerStore,
    DeliveryTransaction,
    ProcessingAttempt,
)
from outbox.application.events.errors import ConsumerPaused
from outbox.application.ports import Clock, Telemetry
from outbox.domain.delivery.outcomes import RecordResult
from outbox.domain.delivery.retry_policy import RetryPolicy

NO_HANDLER = "no_handler"


class _LeaseLost(Exception):
    """The completion was refused: roll the handler's effect back."""


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
    """Claims up to ``batch_size`` deliveries of one consumer and handles each.

    ``retry_policy`` gives the wait after a failed attempt (its schedule); the attempt cap is
    the consumer's own, from the database. ``concurrency`` deliveries run at once (an ordered
    consumer's batch holds one delivery per aggregate, so order is kept).
    ``asyncio.CancelledError`` is never swallowed: a cancelled delivery's lease expires.
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

        async def one(delivery: ClaimedDelivery) -> str:
            async with gate:
                left = deadline - time.monotonic()
                if left <= 0:
                    # Too late to start: the lease expires and the delivery is claimed again.
                    self._report("consumer.lease_running_out", "warning", consumer, delivery)
                    return "lease_lost"
                return await self._process(consumer, delivery, left)

        ends = await asyncio.gather(*(one(delivery) for delivery in deliveries))
        return ProcessingResult(
            claimed=len(deliveries),
            completed=ends.count("completed"),
            retried=ends.count("retried"),
            dead_lettered=ends.count("dead_lettered"),
            lease_lost=ends.count("lease_lost"),
            unrecorded=ends.count("unrecorded"),
            paused=ends.count("paused"),
        )

    async def _process(self, consumer: str, delivery: ClaimedDelivery, within: float) -> str:
        try:
            async with self.store.transaction() as transaction:
                await self._handle(consumer, delivery, transaction, within)
        except ConsumerPaused:
            self._report("consumer.paused", "info", consumer, delivery)
            return "paused"
        except Exception as error:  # noqa: BLE001 - every failure is an attempt; never its text
            return await self._failed(consumer, delivery, error)
        self._report("consumer.delivery_completed", "info", consumer, delivery)
        self.telemetry.count(
            "outbox_consumer_deliveries_total", consumer=consumer, outcome="completed"
        )
        return "completed"

    async def _handle(
        self,
        consumer: str,
        delivery: ClaimedDelivery,
        transaction: DeliveryTransaction,
        within: float,
    ) -> None:
        """Run the handler and record the completion; a lost lease raises _LeaseLost, so the
        transaction rolls the effect back."""
        event = delivery.event
        handler = self.registry.handler(consumer, event.event_type, event.contract_version)
        if handler is None:
            raise Reject(NO_HANDLER)
        async with asyncio.timeout(within):
            await handler.handle(event, transaction.handle)
        result = await transaction.record(ProcessingAttempt.completed(delivery))
        if result is RecordResult.LEASE_LOST:
            raise _LeaseLost

    async def _failed(self, consumer: str, delivery: ClaimedDelivery, error: Exception) -> str:
        if isinstance(error, _LeaseLost):
            self._report("consumer.lease_lost", "warning", consumer, delivery)
            return "lease_lost"
        attempt = self._attempt_after(delivery, error)
        dead = attempt.outcome == "dead_letter" or delivery.is_last_attempt
        try:
            result = await self.store.record(attempt)
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

    def _attempt_after(self, delivery: ClaimedDelivery, error: Exception) -> ProcessingAttempt:
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
