"""Show the tenant events backlog per organization."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from outbox.application.errors import InvalidField
from outbox.application.operator.event_ports import EventOperatorStore
from outbox.application.operator.event_views import OrganizationBacklog
from outbox.application.operator.staff_actor import StaffActor

DEFAULT_LIMIT = 50
MAX_LIMIT = 1000


@attrs.frozen(kw_only=True)
class EventBacklogQuery:
    """Who asks (None: the database operator) and how many organizations at most."""

    actor: StaffActor | None = None
    limit: int = DEFAULT_LIMIT


@attrs.frozen(kw_only=True)
class ShowEventBacklog:
    """Reads the backlog through the staff-gated store, the largest organizations first."""

    store: EventOperatorStore

    async def __call__(self, query: EventBacklogQuery) -> Sequence[OrganizationBacklog]:
        """The organizations; raises InvalidField for a bad limit, StaffRequired or
        StepUpRequired for a caller the store refuses."""
        if not 1 <= query.limit <= MAX_LIMIT:
            raise InvalidField("limit", f"must be between 1 and {MAX_LIMIT}")
        return await self.store.backlog(actor=query.actor, limit=query.limit)
