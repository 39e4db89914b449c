"""What every repair of a tenant event's dead letter shares: its reason, and its report."""

from __future__ import annotations

import re
from collections.abc import Awaitable
from uuid import UUID

from outbox.application.errors import InvalidField
from outbox.application.operator.errors import EventRepairRefused, StaffRequired
from outbox.application.operator.event_views import RepairAction, RepairReceipt
from outbox.application.operator.staff_actor import StaffActor
from outbox.application.ports import Telemetry

MAX_REASON = 500
DONE = {
    RepairAction.REPUBLISH: "operator.event.republished",
    RepairAction.RELEASE: "operator.event.released",
}
_REASON = re.compile(rf"[^\x00-\x1f\x7f]{{1,{MAX_REASON}}}")


def check_reason(reason: str) -> str:
    """The reason, stripped; raises InvalidField for an empty, long or multi-line one.

    It is kept in the audit: a ticket or a sentence, never a payload, a secret or an address.
    """
    stripped = reason.strip()
    if _REASON.fullmatch(stripped) is None:
        raise InvalidField("reason", f"1 to {MAX_REASON} characters on one line")
    return stripped


async def reported_repair(
    repairing: Awaitable[RepairReceipt],
    *,
    telemetry: Telemetry,
    action: RepairAction,
    actor: StaffActor,
    dead_letter_id: UUID,
) -> RepairReceipt:
    """Await ``repairing`` and report it: done, refused, or refused to a non-staff caller."""
    actor_id = str(actor.identity_id)
    try:
        receipt = await repairing
    except StaffRequired:
        telemetry.event(
            "security.staff_required", level="warning", action=action.value, actor_id=actor_id
        )
        raise
    except EventRepairRefused as refused:
        telemetry.event(
            f"operator.event.{action.value}.refused",
            actor_id=actor_id,
            dead_letter_id=str(dead_letter_id),
            refusal=f"already_{refused.resolution}",
        )
        raise
    telemetry.event(
        DONE[action],
        actor_id=actor_id,
        dead_letter_id=str(dead_letter_id),
        record_id=str(receipt.record_id) if receipt.record_id else None,
        replayed=receipt.replayed,
    )
    return receipt
