"""Republish a tenant event's dead letter: a new record of the same event, audited."""

from __future__ import annotations

from uuid import UUID

import attrs

from outbox.application.operator.event_ports import EventOperatorStore
from outbox.application.operator.event_repairs import check_reason, reported_repair
from outbox.application.operator.event_views import RepairAction, RepairReceipt
from outbox.application.operator.idempotency_keys import check_idempotency_key
from outbox.application.operator.staff_actor import StaffActor
from outbox.application.ports import Ids, Telemetry


@attrs.frozen(kw_only=True)
class RepublishCommand:
    """The acting staff member, the dead letter, why, and the request's idempotency key.

    Without a key the request is not idempotent (each call is a new request).
    """

    actor: StaffActor
    dead_letter_id: UUID
    reason: str
    idempotency_key: str | None = None


@attrs.frozen(kw_only=True)
class RepublishDeadEvent:
    """Adds a new record under a new id; the dead one stays final. It keeps the event's place
    in its aggregate, so it is published before the aggregate's later events."""

    store: EventOperatorStore
    ids: Ids
    telemetry: Telemetry

    async def __call__(self, command: RepublishCommand) -> RepairReceipt:
        """The receipt; raises InvalidField (reason, key), StaffRequired, StepUpRequired,
        DeadLetterNotFound, EventRepairRefused, IdempotencyKeyReused or RequestInProgress."""
        reason = check_reason(command.reason)
        key = check_idempotency_key(command.idempotency_key)
        new_id = self.ids.new_id()
        return await reported_repair(
            self.store.republish(
                actor=command.actor,
                dead_letter_id=command.dead_letter_id,
                new_record_id=new_id,
                reason=reason,
                idempotency_key=key or str(new_id),
            ),
            telemetry=self.telemetry,
            action=RepairAction.REPUBLISH,
            actor=command.actor,
            dead_letter_id=command.dead_letter_id,
        )
