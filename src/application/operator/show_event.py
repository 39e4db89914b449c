"""Show one tenant event with its records and attempts (``outboxctl events show``)."""

from __future__ import annotations

from uuid import UUID

import attrs

from outbox.application.operator.errors import EventNotFound
from outbox.application.operator.event_ports import EventOperatorStore
from outbox.application.operator.event_views import EventDetail
from outbox.application.operator.staff_actor import StaffActor


@attrs.frozen(kw_only=True)
class EventQuery:
    """Which event, and who asks (None: the database operator)."""

    event_id: UUID
    actor: StaffActor | None = None


@attrs.frozen(kw_only=True)
class ShowEvent:
    """Reads one event through the staff-gated store."""

    store: EventOperatorStore

    async def __call__(self, query: EventQuery) -> EventDetail:
        """The event; raises EventNotFound, StaffRequired or StepUpRequired."""
        detail = await self.store.event(actor=query.actor, event_id=query.event_id)
        if detail is None:
            raise EventNotFound(str(query.event_id))
        return detail
