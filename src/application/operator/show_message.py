"""Show one message, masked, with its attempt history (``outboxctl messages show``)."""

from __future__ import annotations

from uuid import UUID

import attrs

from outbox.application.delivery.errors import MessageNotFound
from outbox.application.operator.ports import MessageLog, OperatorStore
from outbox.application.operator.views import MessageDetail
from outbox.application.staff import StaffActor


@attrs.frozen(kw_only=True)
class MessageQuery:
    """Which message, and who asks (None: the database operator)."""

    message_id: UUID
    actor: StaffActor | None = None


@attrs.frozen(kw_only=True)
class ShowMessage:
    """Reads one message through the staff-gated store; the database operator (no actor) also
    sees each attempt's provider detail."""

    store: OperatorStore
    log: MessageLog

    async def __call__(self, query: MessageQuery) -> MessageDetail:
        """The message; raises MessageNotFound, or StaffRequired or StepUpRequired for
        a caller the store refuses."""
        detail = await self.store.message(actor=query.actor, message_id=query.message_id)
        if detail is None:
            raise MessageNotFound(str(query.message_id))
        if query.actor is None:
            history = await self.log.history(query.message_id)
            detail = attrs.evolve(detail, history=tuple(history))
        return detail
