"""The ports of the operator's reads and repairs of the queue: staff-gated reads and repairs,
the database operator's message log, the metrics gauge, receipts and suppressions.

``actor`` is the acting staff member with the proof of their authority (StaffActor): the
store refuses (StaffRequired) one without an active staff membership, and (StepUpRequired)
an elevation digest that names no unexpired elevation of that member. An actor without a
digest, and for reads no actor at all, means the database operator (the ``outboxctl``
login), which the store accepts only from a connection that may administer the database
(PermissionDenied otherwise); the API always names an actor and its elevation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol
from uuid import UUID

from outbox.application.delivery.message_filters import MessageFilter
from outbox.application.delivery.views import (
    AttemptView,
    Backlog,
    CopyReceipt,
    DeadLetterSummary,
    MessageDetail,
    MessageSummary,
    ReceiptView,
    Repair,
    SuppressionChange,
    SuppressionView,
)
from outbox.application.staff import StaffActor
from outbox.domain.channels import Channel


class MessageOperatorStore(Protocol):
    """What staff (and the database operator) may read and repair of the queue; one
    transaction per call.

    Every method raises StaffRequired or StepUpRequired for a caller the database refuses,
    PermissionDenied for a connection that may not act without an elevation, and
    StoreUnavailable for a transient database error.
    """

    async def backlog(self, *, actor: StaffActor | None) -> Backlog:
        """Messages per state and the age of the oldest due pending message."""
        ...

    async def dead_letters(
        self, *, actor: StaffActor | None, after: UUID | None, before: UUID | None, limit: int
    ) -> Sequence[DeadLetterSummary]:
        """Up to ``limit`` dead letters, newest first, older than ``after`` or newer than
        ``before`` (at most one cursor).

        Raises InvalidRequest when the cursor names no dead letter.
        """
        ...

    async def message(self, *, actor: StaffActor | None, message_id: UUID) -> MessageDetail | None:
        """The message, masked, with its attempt history; None for an unknown id."""
        ...

    async def requeue(
        self,
        *,
        actor: StaffActor,
        message_id: UUID,
        new_message_id: UUID,
        idempotency_key: str,
        reason: str | None = None,
    ) -> CopyReceipt:
        """Enqueue a copy of a dead-lettered notification as ``new_message_id``, audited
        (with ``reason``, when given, for a staff member with an elevation).

        A replay of ``idempotency_key`` answers the first receipt and enqueues nothing.
        Raises MessageNotFound, DeadLetterRefused, IdempotencyKeyReused or RequestInProgress.
        """
        ...

    async def reissue(
        self,
        *,
        actor: StaffActor,
        message_id: UUID,
        new_message_id: UUID,
        sealed_secret: str,
        code_hash: str,
        idempotency_key: str,
        reason: str | None = None,
    ) -> CopyReceipt:
        """In one transaction: replace the challenge's code hash with ``code_hash``, enqueue
        ``new_message_id`` carrying ``sealed_secret`` until the challenge expires, and audit.

        A replay of ``idempotency_key`` answers the first receipt and changes nothing.
        Raises MessageNotFound, DeadLetterRefused, IdempotencyKeyReused or RequestInProgress.
        """
        ...


class MessageLog(Protocol):
    """The database operator's reads over every message (``outboxctl``), destinations masked.

    Only a connection that may administer the database is served: every method raises
    PermissionDenied for any other (the API role may not execute them), and StoreUnavailable
    for a transient database error.
    """

    async def messages(
        self, *, where: MessageFilter, after: UUID | None, before: UUID | None, limit: int
    ) -> Sequence[MessageSummary]:
        """Up to ``limit`` messages matching ``where``, newest first, older than ``after`` or
        newer than ``before`` (at most one cursor).

        Raises InvalidRequest when the cursor names no message.
        """
        ...

    async def repairs(self, dead_letter_ids: Sequence[UUID]) -> Mapping[UUID, Repair]:
        """The newest reissue or requeue of each dead letter that had one."""
        ...

    async def history(self, message_id: UUID) -> Sequence[AttemptView]:
        """The message's attempts, oldest first, with each provider's detail."""
        ...


class BacklogGauge(Protocol):
    """The backlog counts for metrics, read with no identity (a scrape has none)."""

    async def backlog(self) -> Backlog:
        """Messages per state and the age of the oldest due pending message."""
        ...


class StaffMessageSearch(Protocol):
    """The messages a staff member may search, destinations masked."""

    async def messages(
        self,
        *,
        actor: StaffActor,
        where: MessageFilter,
        after: UUID | None,
        before: UUID | None,
        limit: int,
    ) -> Sequence[MessageSummary]:
        """Up to ``limit`` messages matching ``where``, newest first, older than ``after`` or
        newer than ``before`` (at most one cursor).

        Raises InvalidRequest when the cursor names no message.
        """
        ...


class SuppressionStore(Protocol):
    """Suppressions listed, added and lifted (audited), and a message's receipts.

    Every method raises StaffRequired or StepUpRequired for a caller the database refuses,
    PermissionDenied for a connection that may not act without an elevation, InvalidRequest
    for an argument the database refuses, and StoreUnavailable for a transient error.
    """

    async def suppressions(
        self, *, actor: StaffActor | None, include_lifted: bool, limit: int
    ) -> Sequence[SuppressionView]:
        """Up to ``limit`` suppressions, newest first; lifted ones too if asked."""
        ...

    async def add(
        self, *, actor: StaffActor | None, destination: str, channel: Channel, reason: str
    ) -> SuppressionChange:
        """Suppress the exact ``destination``, audited with ``reason``."""
        ...

    async def lift(
        self, *, actor: StaffActor | None, destination: str, reason: str
    ) -> SuppressionChange | None:
        """Lift the active suppression of ``destination``, audited; None when there is none."""
        ...

    async def receipts(
        self, *, actor: StaffActor | None, message_id: UUID
    ) -> Sequence[ReceiptView]:
        """The receipts of one message, oldest first."""
        ...
