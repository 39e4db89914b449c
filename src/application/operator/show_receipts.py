"""A message's receipts and the delivery state they brought it to."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import attrs

from outbox.application.operator.suppression_ports import SuppressionStore
from outbox.application.operator.suppression_views import ReceiptView
from outbox.application.staff import StaffActor
from outbox.domain.delivery.delivery_states import DeliveryState, advance
from outbox.domain.delivery.receipts import ReceiptEvent


@attrs.frozen(kw_only=True)
class ReceiptsQuery:
    """Which message, and who asks (None: the database operator)."""

    message_id: UUID
    actor: StaffActor | None = None


@attrs.frozen(kw_only=True)
class MessageReceipts:
    """The receipts of one message, oldest first, and the state they add up to.

    ``states_after`` pairs with ``receipts``: the state the message stood in after each.
    """

    message_id: UUID
    delivery_state: DeliveryState
    receipts: Sequence[ReceiptView]
    states_after: Sequence[DeliveryState] = ()


@attrs.frozen(kw_only=True)
class ShowReceipts:
    """Reads a message's receipts through the staff-gated store.

    The state is the domain's fold of the receipts, which is the state the database keeps
    (the two rules are kept equal by a test over every order).
    """

    store: SuppressionStore

    async def __call__(self, query: ReceiptsQuery) -> MessageReceipts:
        """The receipts (none: accepted, or never sent); raises StaffRequired or
        StepUpRequired for a caller the store refuses."""
        receipts = await self.store.receipts(actor=query.actor, message_id=query.message_id)
        state, after = DeliveryState.ACCEPTED, []
        for receipt in receipts:
            state = advance(state, ReceiptEvent(receipt.event))
            after.append(state)
        return MessageReceipts(
            message_id=query.message_id,
            delivery_state=state,
            receipts=tuple(receipts),
            states_after=tuple(after),
        )
