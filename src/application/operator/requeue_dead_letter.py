"""Requeue a dead-lettered notification: a new copy of it, audited."""

from __future__ import annotations

from uuid import UUID

import attrs

from outbox.application.operator.dead_letter_copies import reported_copy
from outbox.application.operator.ports import OperatorStore
from outbox.application.operator.views import CopyReceipt
from outbox.application.ports import Ids, Telemetry
from outbox.application.staff import StaffActor, check_idempotency_key, check_reason


@attrs.frozen(kw_only=True)
class RequeueCommand:
    """The acting staff member, the dead letter, and the request's idempotency key.

    Without a key the request is not idempotent (each call is a new request). ``reason`` (the
    console asks for one) is kept in the audit row.
    """

    actor: StaffActor
    message_id: UUID
    idempotency_key: str | None = None
    reason: str | None = None


@attrs.frozen(kw_only=True)
class RequeueDeadLetter:
    """Enqueues a copy under a new id; the dead letter itself stays final."""

    store: OperatorStore
    ids: Ids
    telemetry: Telemetry

    async def __call__(self, command: RequeueCommand) -> CopyReceipt:
        """The copy's receipt; raises StaffRequired, StepUpRequired, MessageNotFound,
        DeadLetterRefused, IdempotencyKeyReused, RequestInProgress or InvalidField (a
        malformed key)."""
        key = check_idempotency_key(command.idempotency_key)
        reason = None if command.reason is None else check_reason(command.reason)
        new_id = self.ids.new_id()
        return await reported_copy(
            self.store.requeue(
                actor=command.actor,
                message_id=command.message_id,
                new_message_id=new_id,
                idempotency_key=key or str(new_id),
                reason=reason,
            ),
            telemetry=self.telemetry,
            action="requeue",
            actor=command.actor,
            dead_letter_id=command.message_id,
        )
