"""The consumers' ports: what a handler receives, and the store a runner drives."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol
from uuid import UUID

import attrs

from outbox.application.staff import StaffActor
from outbox.domain.delivery.outcomes import RecordResult


@attrs.frozen(kw_only=True)
class DeliveredEvent:
    """A published event as one consumer receives it; ``delivery_id`` names this delivery.

    ``replay_round`` is 0 for the first delivery and counts replays; ``attempt`` is the
    attempt this is (1 the first time).
    """

    delivery_id: UUID
    event_id: UUID
    organization_id: UUID
    event_type: str
    contract_version: int
    aggregate_type: str
    aggregate_id: str
    append_sequence: int
    publication_sequence: int
    replay_round: int
    payload: Mapping[str, Any] = attrs.field(repr=False)
    occurred_at: datetime
    attempt: int
    trace_context: str | None = None


@attrs.frozen(kw_only=True)
class ClaimedDelivery:
    """A delivery leased to this process, with what recording it needs."""

    event: DeliveredEvent
    max_attempts: int
    lease_token: UUID
    lease_expires_at: datetime

    @property
    def is_last_attempt(self) -> bool:
        """Whether a failure of this attempt dead-letters the delivery."""
        return self.event.attempt >= self.max_attempts


Outcome = Literal["completed", "retry", "dead_letter"]


@attrs.frozen(kw_only=True)
class ProcessingAttempt:
    """One processing attempt's outcome, fenced by the lease token and the attempt number.

    ``error_class`` is a class name, never an exception's text; ``code`` a short reason.
    """

    delivery_id: UUID
    lease_token: UUID
    attempt: int
    outcome: Outcome
    error_class: str | None = None
    code: str = ""
    retry_at: datetime | None = None

    @classmethod
    def completed(cls, delivery: ClaimedDelivery) -> ProcessingAttempt:
        """The completion of ``delivery``'s current attempt."""
        return cls(
            delivery_id=delivery.event.delivery_id,
            lease_token=delivery.lease_token,
            attempt=delivery.event.attempt,
            outcome="completed",
        )


class DeliveryBatch(Protocol):
    """One open database transaction in which a batch's handlers write, one after another,
    each in a savepoint of its own, and in which the batch's attempts are recorded at once."""

    @property
    def handle(self) -> Any:
        """What the handlers write through; opaque here (a psycopg AsyncConnection inside its
        transaction, for the PostgreSQL adapter)."""
        ...

    def savepoint(self) -> AbstractAsyncContextManager[None]:
        """A savepoint around one handler: released when the block ends, rolled back to when
        it raises (the exception goes on), so a failed handler leaves none of its writes."""
        ...

    async def record(self, attempts: Sequence[ProcessingAttempt]) -> Sequence[RecordResult]:
        """Record ``attempts`` in this transaction, in one statement: one result per attempt,
        in order. LEASE_LOST for an attempt whose fence failed; then the transaction must not
        commit (that delivery's effect is in it).

        Raises ConsumerPaused when a consumer is paused, and then records nothing.
        """
        ...


class ConsumerStore(Protocol):
    """What a consumer process may do (its module's role, a member of ``events_consumer``)."""

    async def claim(
        self, *, consumer: str, owner: str, limit: int, lease: timedelta
    ) -> Sequence[ClaimedDelivery]:
        """Lease up to ``limit`` of the consumer's claimable deliveries (none when paused).

        Raises PermissionDenied when the role does not run the consumer's module,
        InvalidRequest for an unknown consumer, StoreUnavailable when unreachable.
        """
        ...

    def batch(self) -> AbstractAsyncContextManager[DeliveryBatch]:
        """Open a transaction: committed when the block ends, rolled back when it raises.

        A failed commit raises (StoreUnavailable, InvalidRequest…): nothing was kept.
        """
        ...


@attrs.frozen(kw_only=True)
class ConsumerLag:
    """One consumer as the operator sees it: its settings, subscriptions and lag."""

    consumer: str
    owner_module: str
    active: bool
    ordered: bool
    max_attempts: int
    replay_round: int
    subscriptions: tuple[str, ...]  # ``type:min-max``
    events_behind: int  # deliveries neither completed nor dead-lettered
    oldest_undelivered: timedelta | None  # the age of the oldest of them
    dead_letters: int


@attrs.frozen(kw_only=True)
class ConsumerDeadLetter:
    """A dead-lettered delivery: which event, why (a code, never a message), when."""

    delivery_id: UUID
    sequence: int  # the page cursor
    event_id: UUID
    organization_id: UUID
    event_type: str
    contract_version: int
    publication_sequence: int
    replay_round: int
    attempts: int
    reason: str  # rejected | attempts_exhausted
    code: str
    dead_lettered_at: datetime


class ConsumerAdmin(Protocol):
    """The controls over consumers. ``actor`` is as in operator_ports: a staff member with
    their elevation (the staff routes, checked by the database), or None for the database
    operator (``outboxctl consumers``). Every change is audited with ``reason``."""

    async def lag(self, *, actor: StaffActor | None = None) -> Sequence[ConsumerLag]:
        """Every consumer with its lag, by code."""
        ...

    async def dead_letters(
        self, consumer: str, *, before: int | None, limit: int, actor: StaffActor | None = None
    ) -> Sequence[ConsumerDeadLetter]:
        """A page of the consumer's dead letters, newest first, below ``before``."""
        ...

    async def replay(
        self,
        consumer: str,
        *,
        from_sequence: int | None = None,
        since: datetime | None = None,
        actor: StaffActor | None = None,
        reason: str | None = None,
    ) -> int:
        """Deliver again, in a new round, what was published from that point; how many."""
        ...

    async def set_active(
        self,
        consumer: str,
        *,
        active: bool,
        actor: StaffActor | None = None,
        reason: str | None = None,
    ) -> bool:
        """Pause or resume; whether it changed."""
        ...
