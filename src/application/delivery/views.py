"""What operators see of the queue: backlog counts, dead-letter pages, one message's story,
its receipts and the suppressions.

Destinations here are always masked (outbox.domain.destinations.mask, or its SQL twin); no view
holds an envelope, a code or a code hash.
"""

from __future__ import annotations

import enum
from datetime import datetime, timedelta
from uuid import UUID

import attrs

from outbox.application.staff import KeysetPage
from outbox.domain.channels import Channel
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import State
from outbox.domain.purposes import Purpose


@attrs.frozen(kw_only=True)
class Backlog:
    """Messages per state (zero when none) and how long the oldest due pending one has waited."""

    pending: int = 0
    leased: int = 0
    published: int = 0
    dead_lettered: int = 0
    oldest_due_age: timedelta | None = None  # None: nothing pending is due

    def by_state(self) -> dict[State, int]:
        """The counts keyed by state, every state present."""
        return {
            State.PENDING: self.pending,
            State.LEASED: self.leased,
            State.PUBLISHED: self.published,
            State.DEAD_LETTERED: self.dead_lettered,
        }


class RepairAction(enum.StrEnum):
    """How staff repaired a dead letter: a new code (reissue) or a new copy (requeue)."""

    REISSUE = "reissue"
    REQUEUE = "requeue"


@attrs.frozen(kw_only=True)
class Repair:
    """The new message a reissue or requeue of a dead letter made, and when."""

    action: RepairAction
    message_id: UUID
    at: datetime


@attrs.frozen(kw_only=True)
class DeadLetterSummary:
    """One row of the dead-letter list; the destination is masked."""

    id: UUID
    purpose: Purpose
    channel: Channel
    destination: str  # masked
    attempts: int
    failure_class: FailureClass
    dead_lettered_at: datetime
    expires_at: datetime | None
    repair: Repair | None = None  # read by the database operator only; None for staff reads


DeadLetterPage = KeysetPage[DeadLetterSummary]


@attrs.frozen(kw_only=True)
class MessageSummary:
    """One row of the operator's message list; the destination is masked."""

    id: UUID
    purpose: Purpose
    channel: Channel
    destination: str  # masked
    state: State
    attempts: int
    created_at: datetime
    dead_letter_reason: FailureClass | None
    provider: str  # the last attempt's provider; "" before any attempt
    repair: Repair | None = None


MessagePage = KeysetPage[MessageSummary]


@attrs.frozen(kw_only=True)
class AttemptView:
    """One recorded attempt of a message."""

    attempt: int
    counted: bool
    outcome: str  # published, retry, release or dead_letter
    failure_class: FailureClass | None
    code: str
    provider: str
    provider_message_id: str
    recorded_at: datetime
    retry_at: datetime | None
    detail: str = ""  # the provider's sanitised reason; read by the database operator only


@attrs.frozen(kw_only=True)
class MessageDetail:
    """One message, masked, with its attempt history (``outboxctl messages show``)."""

    id: UUID
    purpose: Purpose
    channel: Channel
    destination: str  # masked
    subject_id: UUID | None
    template: str
    locale: str
    state: State
    attempts: int
    created_at: datetime
    available_at: datetime
    expires_at: datetime | None
    lease_owner: str | None
    lease_expires_at: datetime | None
    published_at: datetime | None
    dead_lettered_at: datetime | None
    dead_letter_reason: FailureClass | None
    has_secret: bool  # whether an envelope is still held (never its content)
    reissued_as: UUID | None  # the copy a reissue or requeue of this message made
    history: tuple[AttemptView, ...] = ()


@attrs.frozen(kw_only=True)
class CopyReceipt:
    """The new message a reissue or requeue enqueued (or, for a replay, had enqueued)."""

    dead_letter_id: UUID
    message_id: UUID
    expires_at: datetime | None
    replayed: bool = False
    waits_for: str | None = None  # the paused provider the copy waits for, until resumed


@attrs.frozen(kw_only=True)
class ReceiptView:
    """One receipt of a message: who said what, and when (the raw body stays in the table)."""

    id: int
    provider: str
    event: str
    detail: str
    occurred_at: datetime
    received_at: datetime


@attrs.frozen(kw_only=True)
class SuppressionView:
    """One suppression: the masked destination, why and since when, lifted or not."""

    id: UUID
    destination: str
    channel: str
    cause: str  # hard_bounce, complaint or operator
    reason: str
    created_at: datetime
    lifted_at: datetime | None


@attrs.frozen(kw_only=True)
class SuppressionChange:
    """What an add or a lift did: the suppression and the masked destination.

    ``changed`` is False for an add of a destination already suppressed.
    """

    id: UUID
    destination: str
    changed: bool
