"""The operator's ports: staff-gated reads and repairs of the queue, and staff membership.

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

from outbox.application.operator.message_filters import MessageFilter
from outbox.application.operator.views import (
    AttemptView,
    Backlog,
    CopyReceipt,
    DeadLetterSummary,
    MessageDetail,
    MessageSummary,
    Repair,
    StaffChange,
)
from outbox.application.staff import StaffActor


class OperatorStore(Protocol):
    """What staff (and the database operator) may read and repair; one transaction per call.

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

    async def staff_identity(self, email: str) -> UUID | None:
        """The identity whose verified e-mail login is ``email`` (database operator only)."""
        ...

    async def grant_staff(self, email: str) -> StaffChange:
        """Make the identity of ``email`` staff, audited (database operator only).

        Raises StaffIdentityNotFound.
        """
        ...

    async def revoke_staff(self, email: str) -> StaffChange:
        """Revoke the staff membership of the identity of ``email``, audited.

        Raises StaffIdentityNotFound.
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
