"""List parked aggregates: those an unresolved dead letter holds, in keyset pages."""

from __future__ import annotations

from uuid import UUID

import attrs

from outbox.application.operator.event_ports import EventOperatorStore
from outbox.application.operator.event_views import ParkedAggregate
from outbox.application.operator.list_event_dead_letters import DEFAULT_LIMIT, check_page
from outbox.application.operator.staff_actor import StaffActor
from outbox.application.operator.views import KeysetPage


@attrs.frozen(kw_only=True)
class ParkedQuery:
    """One page of one organization's (or every) parked aggregates, newest dead letter first."""

    actor: StaffActor | None = None
    organization_id: UUID | None = None
    after: UUID | None = None
    before: UUID | None = None
    limit: int = DEFAULT_LIMIT


@attrs.frozen(kw_only=True)
class ListParkedAggregates:
    """Asks the store for one row more than the page to learn whether the list goes on."""

    store: EventOperatorStore

    async def __call__(self, query: ParkedQuery) -> KeysetPage[ParkedAggregate]:
        """The page; raises as ListEventDeadLetters."""
        check_page(query.limit, query.after, query.before)
        rows = await self.store.parked(
            actor=query.actor,
            organization_id=query.organization_id,
            after=query.after,
            before=query.before,
            limit=query.limit + 1,
        )
        return KeysetPage.of(rows, limit=query.limit, after=query.after, before=query.before)
