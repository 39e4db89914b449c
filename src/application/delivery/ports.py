"""The outbox's ports: rendering, providers, the worker's queue and the producer's writer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Protocol
from uuid import UUID

import attrs

from outbox.domain.channels import Channel
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import Message
from outbox.domain.delivery.outcomes import Outcome, RecordResult
from outbox.domain.delivery.priorities import Priority
from outbox.domain.delivery.retention import RetentionPolicy
from outbox.domain.purposes import Purpose


@attrs.frozen(kw_only=True)
class RenderedMessage:
    """A message ready for a provider: a subject (email), a text part, maybe an HTML part."""

    subject: str
    text: str = attrs.field(repr=False)
    html: str | None = attrs.field(default=None, repr=False)


class Renderer(Protocol):
    """Renders a message's template for its purpose, channel and locale."""

    def render(
        self,
        *,
        template: str,
        channel: Channel,
        locale: str,
        params: Mapping[str, str],
        secret: str | None,
        link: str | None,
    ) -> RenderedMessage:
        """Render; ``secret`` is a one-time code, ``link`` a URL carrying a token."""
        ...


@attrs.frozen(kw_only=True)
class Delivery:
    """One message handed to a provider."""

    message_id: UUID
    channel: Channel
    destination: str = attrs.field(repr=False)
    content: RenderedMessage

    @property
    def idempotency_key(self) -> str:
        """The key a provider that supports idempotency gets: the message id."""
        return str(self.message_id)


class DeliveryProvider(Protocol):
    """One provider account; raises DeliveryFailed with a classified failure when it refuses."""

    @property
    def name(self) -> str:
        """A short stable name (``ses``, ``brevo``…), used in metrics and attempt history."""
        ...

    async def send(self, delivery: Delivery) -> str:
        """Hand the message over; return the provider's message id (or "")."""
        ...


class SendRateLimit(Protocol):
    """A provider's send quota (``OUTBOX_<PROVIDER>_RATE_PER_SECOND``), kept before it says 429."""

    async def acquire(self) -> None:
        """Return when one more send fits under the quota; waiting is the caller's to bound."""
        ...


@attrs.frozen(kw_only=True)
class ClaimedMessage:
    """A message leased to this worker, with its envelope (the claim)."""

    id: UUID
    purpose: Purpose
    channel: Channel
    destination: str = attrs.field(repr=False)
    subject_id: UUID | None
    template: str
    params: Mapping[str, str]
    locale: str
    envelope: str | None = attrs.field(repr=False)
    attempts: int
    expires_at: datetime | None
    lease_token: UUID
    lease_expires_at: datetime
    priority: Priority = Priority.NORMAL  # the claim returns the batch highest first
    trace_context: str | None = None  # the producer's W3C traceparent, when it was traced


@attrs.frozen(kw_only=True)
class AttemptRecord:
    """A worker's outcome for one claimed message, fenced by its lease token and attempt number."""

    message_id: UUID
    lease_token: UUID
    attempt: int  # the claimed attempt count + 1: the number of the attempt being recorded
    outcome: Outcome
    provider: str = ""


class DispatchStore(Protocol):
    """What the worker may do to the queue (role ``outbox_worker``)."""

    async def claim(
        self,
        *,
        owner: str,
        limit: int,
        lease: timedelta,
        urgent: bool = False,
        leave_urgent: timedelta = timedelta(0),
    ) -> Sequence[ClaimedMessage]:
        """Lease up to ``limit`` due messages; expired candidates are dead-lettered instead.

        ``urgent``: high-priority messages only (the worker's reserved slot).
        ``leave_urgent``: a high-priority message due for less than this is left out, for
        the reserved slot running in another process; one due for longer is anybody's.
        """
        ...

    async def record(self, records: Sequence[AttemptRecord]) -> Sequence[RecordResult]:
        """Record outcomes in one round trip; one result per record, in order.

        Raises StoreUnavailable when the database cannot be reached.
        """
        ...

    async def expire(self, *, limit: int) -> int:
        """Dead-letter up to ``limit`` expired messages nobody holds; return how many."""
        ...

    async def purge(self, *, retention: RetentionPolicy, limit: int) -> int:
        """Delete up to ``limit`` final messages past retention, with history; return how many."""
        ...

    async def wait_for_work(self, within: float) -> None:
        """Return when a producer signals new work, or after ``within`` seconds.

        A high-priority message signals the reserved slot's wake-up only (0065): the lane's
        batches take it in their next claim.
        """
        ...


class OutboxWriter(Protocol):
    """What a producer may do, inside its own transaction (role ``outbox_producer``)."""

    async def enqueue(self, message: Message) -> None:
        """Insert a pending message and its envelope; supersede older ones of its subject (resend).

        Raises DuplicateMessage if the id exists.
        """
        ...

    async def cancel_by_subject(self, *, subject_id: UUID, reason: FailureClass) -> int:
        """Withdraw every live message of ``subject_id`` with ``reason``; return how many."""
        ...
