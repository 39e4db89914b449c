"""Show the backlog: messages per state and the age of the oldest due message."""

from __future__ import annotations

import attrs

from outbox.application.operator.ports import OperatorStore
from outbox.application.operator.views import Backlog
from outbox.application.staff import StaffActor


@attrs.frozen(kw_only=True)
class BacklogQuery:
    """Who asks: a staff member, or None for the database operator."""

    actor: StaffActor | None = None


@attrs.frozen(kw_only=True)
class ShowBacklog:
    """Reads the backlog through the staff-gated store."""

    store: OperatorStore

    async def __call__(self, query: BacklogQuery) -> Backlog:
        """The backlog; raises StaffRequired or StepUpRequired for a caller the store
        refuses."""
        return await self.store.backlog(actor=query.actor)
