"""The events outbox's ports: the producer's appender, the worker's store, publication targets."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol
from uuid import UUID

import attrs

from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.outcomes import Outcome, RecordResult
from outbox.domain.delivery.retention import RetentionPolicy
from outbox.domain.events.domain_events import NewDomainEvent


class DomainEventAppender(Protocol):
    """What a producer may do, inside its own open transaction (a module's producer role)."""

    async def append(self, event: NewDomainEvent) -> UUID:
        """Append the event and its outbox record; return the event's id.

        A replay of the same idempotency key with the same content returns the first id.
        Raises IdempotencyConflict (same key, other content), EventTypeRetired,
        ContractVersionUnpublished, or PermissionDenied (not a producer, not the type's owner).
        """
        ...


@attrs.frozen(kw_only=True)
class ClaimedEvent:
    """An event's outbox record leased to this worker (the claim)."""

    record_id: UUID  # the outbox record: lease, attempts, outcome
    event_id: UUID  # the domain event: what targets deduplicate on
    organization_id: UUID
    event_type: str
    contract_version: int
    aggregate_type: str
    aggregate_id: str
    append_sequence: int
    payload: Mapping[str, Any] = attrs.field(repr=False)
    occurred_at: datetime
    appended_at: datetime
    attempts: int
    lease_token: UUID
    lease_expires_at: datetime
    trace_context: str | None = None


@attrs.frozen(kw_only=True)
class PublicationRecord:
    """A worker's outcome for one claimed record, fenced by its lease token and attempt number.

    ``target`` names the publication target that refused (empty when every one accepted).
    """

    record_id: UUID
    lease_token: UUID
    attempt: int  # the claimed attempt count + 1
    outcome: Outcome
    target: str = ""


class EventOutboxStore(Protocol):
    """What the worker may do to the events outbox (role ``outbox_worker``)."""

    async def claim(self, *, owner: str, limit: int, lease: timedelta) -> Sequence[ClaimedEvent]:
        """Lease up to ``limit`` due records: per aggregate only the oldest live one, and
        organizations served fairly. Parked aggregates are skipped."""
        ...

    async def record(self, records: Sequence[PublicationRecord]) -> Sequence[RecordResult]:
        """Record outcomes in one round trip; one result per record, in order.

        A published record gets its publication sequence (and its consumers' deliveries) in
        the same transaction. Raises StoreUnavailable when the database cannot be reached.
        """
        ...

    async def purge(self, *, retention: RetentionPolicy, limit: int) -> int:
        """Delete up to ``limit`` events whose records are final past retention; return how many."""
        ...

    async def wait_for_work(self, within: float) -> None:
        """Return when a producer signals new events, or after ``within`` seconds."""
        ...


@attrs.frozen(kw_only=True)
class TargetRefusal:
    """A publication target did not accept an event: how to classify it, and maybe when to retry."""

    failure_class: FailureClass
    code: str = ""
    retry_after: timedelta | None = None


class PublicationTarget(Protocol):
    """Somewhere an event is published to (the broker relay).

    The internal consumers are not a target here: their deliveries are written by the
    database in the transaction that records the publication.
    """

    @property
    def name(self) -> str:
        """A short stable name (``nats``), kept in attempts and metrics."""
        ...

    async def publish(self, events: Sequence[ClaimedEvent]) -> Sequence[TargetRefusal | None]:
        """Publish each event (idempotently, keyed on its event id); one answer per event,
        in order: None when accepted."""
        ...
