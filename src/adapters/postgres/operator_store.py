"""OperatorStore and BacklogGauge over the operator SQL functions.

A staff member who presents an elevation is served by the staff_* functions of
0009_roles_by_job.sql, which check that elevation in the database; the database operator
(no elevation) by the functions of 0007_operator_functions.sql, which only a login that may
administer the database can call. The functions mask destinations and gate the caller
themselves; this adapter only picks the function, maps rows to views and outcome words to
the application's errors.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, LiteralString
from uuid import UUID

import attrs
import psycopg
from psycopg import AsyncConnection
from psycopg import errors as pg_errors
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.error_translation import translate
from outbox.adapters.postgres.views import OLDEST_DUE_AGE, fetch_views, gated, read_views
from outbox.application.delivery.errors import DeadLetterRefused, DuplicateMessage, MessageNotFound
from outbox.application.delivery.views import (
    AttemptView,
    Backlog,
    CopyReceipt,
    DeadLetterSummary,
    MessageDetail,
)
from outbox.application.errors import PermissionDenied
from outbox.application.operator.errors import NotStaff, StaffIdentityNotFound
from outbox.application.operator.views import StaffChange
from outbox.application.staff import (
    IdempotencyKeyReused,
    RequestInProgress,
    StaffActor,
    StaffRequired,
    StepUpRequired,
)
from outbox.domain.delivery.dead_letters import Refusal

BACKLOG_COLUMNS = "pending, leased, published, dead_lettered, " + OLDEST_DUE_AGE
BACKLOG = "SELECT " + BACKLOG_COLUMNS + " FROM outbox.backlog(%s::uuid)"
STAFF_BACKLOG = "SELECT " + BACKLOG_COLUMNS + " FROM outbox.staff_backlog(%s::uuid, %s::text)"
BACKLOG_METRICS = "SELECT " + BACKLOG_COLUMNS + " FROM outbox.backlog_metrics()"
DEAD_LETTER_COLUMNS = """
SELECT id, purpose, channel, destination, attempt_count AS attempts, failure_class,
       dead_lettered_at, expires_at
"""
DEAD_LETTERS = (
    DEAD_LETTER_COLUMNS + "FROM outbox.dead_letters(%s::uuid, %s::uuid, %s::uuid, %s::integer)"
)
STAFF_DEAD_LETTERS = (
    DEAD_LETTER_COLUMNS
    + "FROM outbox.staff_dead_letters(%s::uuid, %s::text, %s::uuid, %s::uuid, %s::integer)"
)
MESSAGE_COLUMNS = """
SELECT id, purpose, channel, destination, subject_id, template, locale, state,
       attempt_count AS attempts, created_at, available_at, expires_at, lease_owner,
       lease_expires_at, published_at, dead_lettered_at, dead_letter_reason, has_secret, reissued_as
"""
MESSAGE = MESSAGE_COLUMNS + "FROM outbox.message_detail(%s::uuid, %s::uuid)"
STAFF_MESSAGE = MESSAGE_COLUMNS + "FROM outbox.staff_message_detail(%s::uuid, %s::text, %s::uuid)"
ATTEMPT_COLUMNS = """
SELECT attempt, counted, outcome, failure_class, code, provider, provider_message_id,
       recorded_at, retry_at
"""
ATTEMPTS = ATTEMPT_COLUMNS + "FROM outbox.message_attempts(%s::uuid, %s::uuid)"
STAFF_ATTEMPTS = (
    ATTEMPT_COLUMNS + "FROM outbox.staff_message_attempts(%s::uuid, %s::text, %s::uuid)"
)
REQUEUE_COLUMNS = "SELECT outcome, new_message_id, NULL::timestamptz "
REQUEUE = (
    REQUEUE_COLUMNS + "FROM outbox.requeue_dead_letter(%s::uuid, %s::uuid, %s::uuid, %s::text)"
)
STAFF_REQUEUE = (
    REQUEUE_COLUMNS
    + "FROM outbox.staff_requeue_dead_letter(%s::uuid, %s::text, %s::uuid, %s::uuid, %s::text)"
)
# The same, keeping the console's reason in the audit row (0032_console.sql).
STAFF_REQUEUE_FOR = (
    REQUEUE_COLUMNS
    + "FROM outbox.staff_requeue_dead_letter_for(%s::uuid, %s::text, %s::uuid, %s::uuid,"
    " %s::text, %s::text)"
)
REISSUE_COLUMNS = "SELECT outcome, new_message_id, expires_at "
REISSUE = (
    REISSUE_COLUMNS
    + "FROM outbox.reissue_dead_letter(%s::uuid, %s::uuid, %s::uuid, %s::text, %s::text,"
    " %s::text)"
)
STAFF_REISSUE = (
    REISSUE_COLUMNS
    + "FROM outbox.staff_reissue_dead_letter(%s::uuid, %s::text, %s::uuid, %s::uuid, %s::text,"
    " %s::text, %s::text)"
)
STAFF_REISSUE_FOR = (
    REISSUE_COLUMNS
    + "FROM outbox.staff_reissue_dead_letter_for(%s::uuid, %s::text, %s::uuid, %s::uuid,"
    " %s::text, %s::text, %s::text, %s::text)"
)
STAFF_IDENTITY = "SELECT outbox.staff_identity(%s::text)"
GRANT_STAFF = "SELECT outcome, identity_id FROM outbox.grant_staff(%s::text)"
BREAK_GLASS = (
    "SELECT outcome, identity_id FROM outbox.break_glass_step_up(%s::text, %s::uuid, %s::text,"
    " %s::timestamptz, %s::text)"
)
REVOKE_STAFF = "SELECT outcome, identity_id FROM outbox.revoke_staff(%s::text)"

STAFF_REQUIRED = "staff membership required"  # the primary message of outbox.require_staff
STEP_UP_REQUIRED = "fresh step-up required"  # ... and of outbox.require_elevation
# The unique indexes of the audit tables' idempotency keys (0006; 0020 for tenant events).
IDEMPOTENCY_INDEXES = frozenset({"staff_audit_idempotency", "operator_audit_idempotency"})
DONE = frozenset({"reissued", "requeued"})

Row = tuple[Any, ...]


@contextmanager
def operator_errors() -> Iterator[None]:
    """Raise the application error a database error stands for, chained to it.

    42501 from the staff gate is StaffRequired, from the elevation check StepUpRequired (any
    other 42501, such as a role without EXECUTE, stays PermissionDenied); a duplicate
    idempotency key that slipped past the advisory lock is a request in progress.
    """
    try:
        yield
    except pg_errors.InsufficientPrivilege as error:
        if error.diag.message_primary == STAFF_REQUIRED:
            raise StaffRequired(error.sqlstate or "") from error
        if error.diag.message_primary == STEP_UP_REQUIRED:
            raise StepUpRequired from error
        raise PermissionDenied(error.sqlstate or "") from error
    except pg_errors.UniqueViolation as error:
        if error.diag.constraint_name in IDEMPOTENCY_INDEXES:
            raise RequestInProgress from error
        raise DuplicateMessage(error.diag.constraint_name or "") from error
    except psycopg.Error as error:
        translated = translate(error)
        if translated is None:
            raise
        raise translated from error


def _receipt(row: Row | None, dead_letter_id: UUID) -> CopyReceipt:
    """The receipt an outcome row stands for, or the error it names."""
    if row is None:  # the functions always answer one row
        raise RuntimeError("the operator function answered no row")
    outcome, new_message_id, expires_at = row
    if outcome in DONE or outcome == "replayed":
        return CopyReceipt(
            dead_letter_id=dead_letter_id,
            message_id=new_message_id,
            expires_at=expires_at,
            replayed=outcome == "replayed",
        )
    if outcome == "in_progress":
        raise RequestInProgress
    if outcome == "key_reused":
        raise IdempotencyKeyReused
    if outcome == "not_found":
        raise MessageNotFound(str(dead_letter_id))
    raise DeadLetterRefused(Refusal(outcome))


def _staff_change(row: Row | None) -> StaffChange:
    if row is None or row[0] == "unknown_identity":
        raise StaffIdentityNotFound
    outcome, identity_id = row
    return StaffChange(identity_id=identity_id, changed=outcome in ("granted", "revoked"))


class PostgresOperatorStore:
    """OperatorStore on a pool; each call is its own transaction.

    On the API pool (role ``identity_service``) every call must name a staff actor with an
    elevation; the database operator's pool (a member of ``outbox_owner``) may also act in a
    staff member's name without one, read with no actor at all, and is the only one that may
    grant or revoke staff.
    """

    def __init__(self, pool: AsyncConnectionPool[AsyncConnection]) -> None:
        self._pool = pool

    async def backlog(self, *, actor: StaffActor | None) -> Backlog:
        """Messages per state and the age of the oldest due pending message."""
        with operator_errors():
            found = await read_views(self._pool, Backlog, *gated(actor, STAFF_BACKLOG, BACKLOG, ()))
        return found[0] if found else Backlog()

    async def dead_letters(
        self, *, actor: StaffActor | None, after: UUID | None, before: UUID | None, limit: int
    ) -> Sequence[DeadLetterSummary]:
        """Up to ``limit`` dead letters, newest first, on one side of the cursor."""
        query, params = gated(actor, STAFF_DEAD_LETTERS, DEAD_LETTERS, (after, before, limit))
        with operator_errors():
            return await read_views(self._pool, DeadLetterSummary, query, params)

    async def message(self, *, actor: StaffActor | None, message_id: UUID) -> MessageDetail | None:
        """The message with its attempt history, read in one transaction."""
        detail, params = gated(actor, STAFF_MESSAGE, MESSAGE, (message_id,))
        history, _ = gated(actor, STAFF_ATTEMPTS, ATTEMPTS, ())
        with operator_errors():
            async with self._pool.connection() as conn, conn.transaction():
                found = await fetch_views(conn, MessageDetail, detail, params)
                if not found:
                    return None
                attempts = await fetch_views(conn, AttemptView, history, params)
                return attrs.evolve(found[0], history=tuple(attempts))

    async def requeue(
        self,
        *,
        actor: StaffActor,
        message_id: UUID,
        new_message_id: UUID,
        idempotency_key: str,
        reason: str | None = None,
    ) -> CopyReceipt:
        """Enqueue a copy of a dead-lettered notification, audited, in one transaction."""
        params = (message_id, new_message_id, idempotency_key)
        if reason is not None and actor.elevation_digest is not None:
            row = await self._one(
                STAFF_REQUEUE_FOR, (actor.identity_id, actor.elevation_digest, *params, reason)
            )
        else:
            row = await self._one(*gated(actor, STAFF_REQUEUE, REQUEUE, params))
        return _receipt(row, message_id)

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
        """Swap the challenge's code hash, enqueue the new message and audit, in one call."""
        params = (message_id, new_message_id, sealed_secret, code_hash, idempotency_key)
        if reason is not None and actor.elevation_digest is not None:
            row = await self._one(
                STAFF_REISSUE_FOR, (actor.identity_id, actor.elevation_digest, *params, reason)
            )
        else:
            row = await self._one(*gated(actor, STAFF_REISSUE, REISSUE, params))
        return _receipt(row, message_id)

    async def staff_identity(self, email: str) -> UUID | None:
        """The identity of the verified e-mail login, or None."""
        row = await self._one(STAFF_IDENTITY, (email,))
        return row[0] if row is not None else None

    async def grant_staff(self, email: str) -> StaffChange:
        """Make the e-mail's identity staff, audited."""
        return _staff_change(await self._one(GRANT_STAFF, (email,)))

    async def revoke_staff(self, email: str) -> StaffChange:
        """Revoke the e-mail's identity's staff membership, audited."""
        return _staff_change(await self._one(REVOKE_STAFF, (email,)))

    async def break_glass_step_up(
        self, *, email: str, challenge_id: UUID, code_hash: str, expires_at: datetime, reason: str
    ) -> UUID:
        """Open the staff member's step-up challenge, audited; nothing is sent."""
        row = await self._one(BREAK_GLASS, (email, challenge_id, code_hash, expires_at, reason))
        if row is None or row[0] == "unknown_identity":
            raise StaffIdentityNotFound
        if row[0] == "not_staff":
            raise NotStaff
        return UUID(str(row[1]))

    async def _one(self, query: LiteralString, params: tuple[Any, ...]) -> Row | None:
        with operator_errors():
            async with self._pool.connection() as conn:
                cursor = await conn.execute(query, params)
                return await cursor.fetchone()


class PostgresBacklogGauge:
    """BacklogGauge on the API pool: the counts only, with no identity."""

    def __init__(self, pool: AsyncConnectionPool[AsyncConnection]) -> None:
        self._pool = pool

    async def backlog(self) -> Backlog:
        """Messages per state and the age of the oldest due pending message."""
        with operator_errors():
            found = await read_views(self._pool, Backlog, BACKLOG_METRICS)
        return found[0] if found else Backlog()
