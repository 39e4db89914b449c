"""What staff see reported when they copy a dead letter into a new message (reissue, requeue)."""

from __future__ import annotations

from collections.abc import Awaitable
from uuid import UUID

from outbox.application.operator.errors import DeadLetterRefused
from outbox.application.operator.views import CopyReceipt
from outbox.application.ports import Telemetry
from outbox.application.staff import StaffActor, StaffRequired


async def reported_copy(
    copying: Awaitable[CopyReceipt],
    *,
    telemetry: Telemetry,
    action: str,
    actor: StaffActor,
    dead_letter_id: UUID,
) -> CopyReceipt:
    """Await ``copying`` and report its outcome: done, refused, or refused to a non-staff caller.

    ``action`` is ``reissue`` or ``requeue``; the errors are re-raised as they came.
    """
    actor_id = str(actor.identity_id)
    try:
        receipt = await copying
    except StaffRequired:
        telemetry.event(
            "security.staff_required", level="warning", action=action, actor_id=actor_id
        )
        raise
    except DeadLetterRefused as refused:
        telemetry.event(
            f"operator.{action}.refused",
            actor_id=actor_id,
            dead_letter_id=str(dead_letter_id),
            refusal=refused.refusal.value,
        )
        raise
    telemetry.event(
        f"operator.dead_letter.{action}d",
        actor_id=actor_id,
        dead_letter_id=str(receipt.dead_letter_id),
        message_id=str(receipt.message_id),
        replayed=receipt.replayed,
    )
    return receipt
