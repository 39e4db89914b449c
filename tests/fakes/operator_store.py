"""An in-memory OperatorStore and BacklogGauge over the in-memory outbox store.

It follows the operator SQL functions rule for rule (tests/contract/ runs the same suite on
both): staff gating, masking, keyset pages, the order of the reissue and requeue checks,
idempotent replays and the audit trail.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

import attrs

from outbox.application.delivery.errors import DeadLetterRefused, MessageNotFound
from outbox.application.delivery.views import (
    AttemptView,
    Backlog,
    CopyReceipt,
    DeadLetterSummary,
    MessageDetail,
)
from outbox.application.errors import InvalidRequest, PermissionDenied
from outbox.application.operator.errors import NotStaff, StaffIdentityNotFound
from outbox.application.operator.views import StaffChange
from outbox.application.staff import MAX_KEY as MAX_LENGTH
from outbox.application.staff import (
    READ_WINDOW,
    IdempotencyKeyReused,
    RequestInProgress,
    StaffActor,
    StaffRequired,
    StepUpRequired,
)
from outbox.domain.delivery.dead_letters import Refusal, is_delivery_failure
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import Message, State
from outbox.domain.delivery.outcomes import DeadLetter, Outcome, Published, Release, Retry
from outbox.domain.destinations import mask
from outbox.domain.identity.challenges import Challenge
from outbox.domain.operator.dead_letters import challenge_refusal
from outbox.domain.purposes import Purpose
from tests.fakes.outbox_store import InMemoryOutboxStore, RecordedAttempt

MAX_PAGE = 1001  # the same bound as outbox.dead_letters


@attrs.define
class StaffRow:
    """One row of identity.staff_members."""

    granted_at: datetime
    revoked_at: datetime | None = None


@attrs.frozen(kw_only=True)
class AuditRow:
    """One row of outbox.staff_audit."""

    action: str
    actor_id: UUID | None
    occurred_at: datetime
    message_id: UUID | None = None
    new_message_id: UUID | None = None
    target_identity_id: UUID | None = None
    idempotency_key: str | None = None
    reason: str | None = None  # the console's reason (console_reason)


def attempt_columns(outcome: Outcome) -> tuple[str, str | None, str, str, datetime | None]:
    """(outcome, failure class, code, provider message id, retry time) as the table has them."""
    match outcome:
        case Published(provider_message_id=receipt):
            return "published", None, "", receipt, None
        case Retry(available_at=at, failure_class=failure, code=code):
            return "retry", failure.value, code, "", at
        case Release(available_at=at, failure_class=failure, code=code):
            return "release", failure.value, code, "", at
        case DeadLetter(reason=reason, code=code):
            return "dead_letter", reason.value, code, "", None


def attempt_detail(outcome: Outcome) -> str:
    """The provider's detail the attempt history keeps ("" for a published attempt)."""
    return "" if isinstance(outcome, Published) else outcome.detail


@attrs.define
class InMemoryOperatorStore:
    """Staff, verified e-mails, challenges and the audit around an InMemoryOutboxStore.

    ``database_operator`` says whether calls without an elevation come from a connection
    that may administer the database (outboxctl) or from the API role, which may not make
    them at all. ``elevations`` maps an elevation token's digest to its identity and expiry
    (the sessions behind them are taken to be active). ``in_progress`` holds (actor, key)
    pairs another transaction is handling right now.
    """

    outbox: InMemoryOutboxStore = attrs.field(factory=InMemoryOutboxStore)
    challenges: dict[UUID, Challenge] = attrs.field(factory=dict)
    staff: dict[UUID, StaffRow] = attrs.field(factory=dict)
    # Elevation digest → (identity, granted at, expires at).
    elevations: dict[str, tuple[UUID, datetime, datetime]] = attrs.field(factory=dict)
    emails: dict[str, UUID] = attrs.field(factory=dict)
    audit: list[AuditRow] = attrs.field(factory=list)
    break_glass: list[tuple[UUID, UUID, str]] = attrs.field(factory=list)
    in_progress: set[tuple[UUID, str]] = attrs.field(factory=set)
    database_operator: bool = True

    def now(self) -> datetime:
        """The database clock."""
        return self.outbox.clock.now()

    # Reads

    async def backlog(self, *, actor: StaffActor | None) -> Backlog:
        """Messages per state and the age of the oldest due pending message."""
        self._require_operator(actor)
        return self._count()

    async def dead_letters(
        self, *, actor: StaffActor | None, after: UUID | None, before: UUID | None, limit: int
    ) -> Sequence[DeadLetterSummary]:
        """Up to ``limit`` dead letters, newest first, on one side of the cursor."""
        self._require_operator(actor)
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidRequest("limit: must be between 1 and 1001")
        if after is not None and before is not None:
            raise InvalidRequest("after, before: give at most one cursor")
        dead = sorted(
            (m for m in self.outbox.messages.values() if m.state is State.DEAD_LETTERED),
            key=lambda m: (m.dead_lettered_at or self.now(), m.id),
            reverse=True,
        )
        cursor = after or before
        if cursor is None:
            return [self._summary(m) for m in dead[:limit]]
        found = self.outbox.messages.get(cursor)
        if found is None or found.state is not State.DEAD_LETTERED:
            raise InvalidRequest("cursor: no dead letter has this id")
        key = (found.dead_lettered_at or self.now(), found.id)
        if after is not None:
            older = [m for m in dead if (m.dead_lettered_at or self.now(), m.id) < key]
            return [self._summary(m) for m in older[:limit]]
        newer = [m for m in reversed(dead) if (m.dead_lettered_at or self.now(), m.id) > key]
        return [self._summary(m) for m in reversed(newer[:limit])]

    async def message(self, *, actor: StaffActor | None, message_id: UUID) -> MessageDetail | None:
        """The message, masked, with its attempt history."""
        self._require_operator(actor)
        message = self.outbox.messages.get(message_id)
        if message is None:
            return None
        copies = [
            a.new_message_id
            for a in self.audit
            if a.message_id == message_id and a.action in ("reissue", "requeue")
        ]
        return MessageDetail(
            id=message.id,
            purpose=message.purpose,
            channel=message.channel,
            destination=mask(message.destination),
            subject_id=message.subject_id,
            template=message.template,
            locale=message.locale,
            state=message.state,
            attempts=message.attempts,
            created_at=message.created_at,
            available_at=message.available_at,
            expires_at=message.expires_at,
            lease_owner=message.lease.owner if message.lease else None,
            lease_expires_at=message.lease.expires_at if message.lease else None,
            published_at=message.published_at,
            dead_lettered_at=message.dead_lettered_at,
            dead_letter_reason=message.dead_letter_reason,
            has_secret=message.sealed_secret is not None,
            reissued_as=copies[-1] if copies else None,
            history=tuple(
                self._attempt(a) for a in self.outbox.attempts if a.message_id == message_id
            ),
        )

    # Repairs

    async def requeue(
        self,
        *,
        actor: StaffActor,
        message_id: UUID,
        new_message_id: UUID,
        idempotency_key: str,
        reason: str | None = None,
    ) -> CopyReceipt:
        """Enqueue a copy of a dead-lettered notification, audited."""
        self._require_staff(actor)
        replay = self._replay(actor.identity_id, idempotency_key, "requeue", message_id)
        if replay is not None:
            return replay
        message = self._dead_letter(message_id)
        if message.purpose is not Purpose.NOTIFICATION:
            raise DeadLetterRefused(Refusal.NOT_REQUEUEABLE)
        if any(a.message_id == message_id and a.action == "requeue" for a in self.audit):
            raise DeadLetterRefused(Refusal.ALREADY_REQUEUED)
        await self.outbox.enqueue(message.requeue(new_id=new_message_id, now=self.now()))
        self._audit(
            "requeue", actor.identity_id, message_id, new_message_id, idempotency_key, reason
        )
        return CopyReceipt(dead_letter_id=message_id, message_id=new_message_id, expires_at=None)

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
        """Swap the challenge's hash, enqueue the sealed new code and audit, all or nothing."""
        self._require_staff(actor)
        replay = self._replay(actor.identity_id, idempotency_key, "reissue", message_id)
        if replay is not None:
            return replay
        message = self._dead_letter(message_id)
        if not message.purpose.is_reissuable:
            raise DeadLetterRefused(Refusal.NOT_REISSUABLE)
        if message.dead_letter_reason is not None and not is_delivery_failure(
            message.dead_letter_reason
        ):
            raise DeadLetterRefused(Refusal.NOT_A_DELIVERY_FAILURE)
        now = self.now()
        challenge = self.challenges.get(message.subject_id) if message.subject_id else None
        if challenge is not None and challenge.identity_id == actor.identity_id:
            raise DeadLetterRefused(Refusal.OWN_CHALLENGE)
        refusal = challenge_refusal(challenge, now)
        if refusal is not None or challenge is None:
            raise DeadLetterRefused(refusal or Refusal.CHALLENGE_MISSING)
        if self._newer_exists(message):
            raise DeadLetterRefused(Refusal.NEWER_MESSAGE_EXISTS)
        copy = message.reissue(
            new_id=new_message_id,
            sealed_secret=sealed_secret,
            now=now,
            expires_at=challenge.expires_at,
        )
        await self.outbox.enqueue(copy)  # raises for a bad envelope before anything changed
        self.challenges[challenge.id] = attrs.evolve(challenge, code_hash=code_hash)
        self._audit(
            "reissue", actor.identity_id, message_id, new_message_id, idempotency_key, reason
        )
        return CopyReceipt(
            dead_letter_id=message_id, message_id=new_message_id, expires_at=challenge.expires_at
        )

    # Staff membership (database operator only)

    async def staff_identity(self, email: str) -> UUID | None:
        """The identity of the verified e-mail, or None."""
        self._require_database_operator()
        return self.emails.get(email)

    async def grant_staff(self, email: str) -> StaffChange:
        """Make the e-mail's identity staff (again), audited."""
        identity_id = await self._known(email)
        row = self.staff.get(identity_id)
        if row is not None and row.revoked_at is None:
            return StaffChange(identity_id=identity_id, changed=False)
        self.staff[identity_id] = StaffRow(granted_at=self.now())
        self.audit.append(
            AuditRow(
                action="staff_grant",
                actor_id=None,
                occurred_at=self.now(),
                target_identity_id=identity_id,
            )
        )
        return StaffChange(identity_id=identity_id, changed=True)

    async def break_glass_step_up(
        self, *, email: str, challenge_id: UUID, code_hash: str, expires_at: datetime, reason: str
    ) -> UUID:
        """The staff member's identity; the challenge itself is the identity store's."""
        identity_id = await self._known(email)
        row = self.staff.get(identity_id)
        if row is None or row.revoked_at is not None:
            raise NotStaff
        self.break_glass.append((identity_id, challenge_id, reason))
        return identity_id

    async def revoke_staff(self, email: str) -> StaffChange:
        """Revoke the e-mail's identity's staff membership, audited."""
        identity_id = await self._known(email)
        row = self.staff.get(identity_id)
        if row is None or row.revoked_at is not None:
            return StaffChange(identity_id=identity_id, changed=False)
        row.revoked_at = self.now()
        self.audit.append(
            AuditRow(
                action="staff_revoke",
                actor_id=None,
                occurred_at=self.now(),
                target_identity_id=identity_id,
            )
        )
        return StaffChange(identity_id=identity_id, changed=True)

    # Internals

    def _count(self) -> Backlog:
        now = self.now()
        counts = dict.fromkeys(State, 0)
        for message in self.outbox.messages.values():
            counts[message.state] += 1
        due = [
            m.available_at
            for m in self.outbox.messages.values()
            if m.state is State.PENDING and m.available_at <= now
        ]
        return Backlog(
            pending=counts[State.PENDING],
            leased=counts[State.LEASED],
            published=counts[State.PUBLISHED],
            dead_lettered=counts[State.DEAD_LETTERED],
            oldest_due_age=now - min(due) if due else None,
        )

    def _summary(self, message: Message) -> DeadLetterSummary:
        if message.dead_lettered_at is None or message.dead_letter_reason is None:
            raise ValueError("not a dead letter")
        return DeadLetterSummary(
            id=message.id,
            purpose=message.purpose,
            channel=message.channel,
            destination=mask(message.destination),
            attempts=message.attempts,
            failure_class=message.dead_letter_reason,
            dead_lettered_at=message.dead_lettered_at,
            expires_at=message.expires_at,
        )

    @staticmethod
    def _attempt(attempt: RecordedAttempt) -> AttemptView:
        outcome, failure, code, receipt, retry_at = attempt_columns(attempt.outcome)
        return AttemptView(
            attempt=attempt.attempt,
            counted=attempt.counted,
            outcome=outcome,
            failure_class=None if failure is None else FailureClass(failure),
            code=code,
            provider=attempt.provider,
            provider_message_id=receipt,
            recorded_at=attempt.recorded_at,
            retry_at=retry_at,
        )

    def _require_staff(self, actor: StaffActor, *, reading: bool = False) -> None:
        """A write needs a live elevation; a read one granted within READ_WINDOW."""
        if actor.elevation_digest is None:
            self._require_database_operator()
        row = self.staff.get(actor.identity_id)
        if row is None or row.revoked_at is not None:
            raise StaffRequired("42501")
        if actor.elevation_digest is not None:
            now = self.now()
            identity_id, granted_at, expires_at = self.elevations.get(
                actor.elevation_digest, (None, now, now)
            )
            fresh = expires_at > now or (reading and now - granted_at < READ_WINDOW)
            if identity_id != actor.identity_id or not fresh:
                raise StepUpRequired

    def _require_operator(self, actor: StaffActor | None) -> None:
        if actor is not None:
            self._require_staff(actor, reading=True)
        else:
            self._require_database_operator()

    def _require_database_operator(self) -> None:
        if not self.database_operator:
            raise PermissionDenied("42501")

    async def _known(self, email: str) -> UUID:
        identity_id = await self.staff_identity(email)
        if identity_id is None:
            raise StaffIdentityNotFound
        return identity_id

    def _replay(self, actor: UUID, key: str, action: str, message_id: UUID) -> CopyReceipt | None:
        if not 1 <= len(key) <= MAX_LENGTH:
            raise InvalidRequest("idempotency key: 1 to 255 characters required")
        if (actor, key) in self.in_progress:
            raise RequestInProgress
        for row in self.audit:
            if row.actor_id == actor and row.idempotency_key == key:
                new_id = row.new_message_id
                if row.action != action or row.message_id != message_id or new_id is None:
                    raise IdempotencyKeyReused
                copy = self.outbox.messages.get(new_id)
                challenge = (
                    self.challenges.get(copy.subject_id) if copy and copy.subject_id else None
                )
                return CopyReceipt(
                    dead_letter_id=message_id,
                    message_id=new_id,
                    expires_at=challenge.expires_at if challenge else None,
                    replayed=True,
                )
        return None

    def _dead_letter(self, message_id: UUID) -> Message:
        message = self.outbox.messages.get(message_id)
        if message is None:
            raise MessageNotFound(str(message_id))
        if message.state is not State.DEAD_LETTERED:
            raise DeadLetterRefused(Refusal.NOT_DEAD_LETTERED)
        return message

    def _newer_exists(self, dead: Message) -> bool:
        for other in self.outbox.messages.values():
            if other.purpose is not dead.purpose or other.destination != dead.destination:
                continue
            if other.is_live:
                return True
            if (
                other.state is State.PUBLISHED
                and other.published_at is not None
                and other.published_at > dead.created_at
                and other.created_at > dead.created_at
            ):
                return True
        return False

    def _audit(  # noqa: PLR0917 - the audit row's columns, in the table's order
        self,
        action: str,
        actor: UUID,
        message_id: UUID,
        new_message_id: UUID,
        key: str,
        reason: str | None = None,
    ) -> None:
        self.audit.append(
            AuditRow(
                action=action,
                actor_id=actor,
                occurred_at=self.now(),
                message_id=message_id,
                new_message_id=new_message_id,
                idempotency_key=key,
                reason=reason,
            )
        )


@attrs.define
class InMemoryBacklogGauge:
    """BacklogGauge over the same in-memory store."""

    operator: InMemoryOperatorStore

    async def backlog(self) -> Backlog:
        """The counts, with no identity."""
        return self.operator._count()
