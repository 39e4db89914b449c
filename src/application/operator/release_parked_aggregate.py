"""Release a parked aggregate: its dead letter stays dead, its later events flow."""

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
class ReleaseCommand:
    """The acting staff member, the dead letter that parks the aggregate, why, and the key."""

    actor: StaffActor
    dead_letter_id: UUID
    reason: str
    idempotency_key: str | None = None


@attrs.frozen(kw_only=True)
class ReleaseParkedAggregate:
    """Resolves the dead letter 'released', audited; never publishes it."""

    store: EventOperatorStore
    ids: Ids
    telemetry: Telemetry

    async def __call__(self, command: ReleaseCommand) -> RepairReceipt:
        """The receipt; raises as RepublishDeadEvent."""
        reason = check_reason(command.reason)
        key = check_idempotency_key(command.idempotency_key)
        return await reported_repair(
            self.store.release(
                actor=command.actor,
                dead_letter_id=command.dead_letter_id,
                reason=reason,
                idempotency_key=key or str(self.ids.new_id()),
            ),
            telemetry=self.telemetry,
            action=RepairAction.RELEASE,
            actor=command.actor,
            dead_letter_id=command.dead_letter_id,
        )
