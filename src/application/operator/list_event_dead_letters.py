"""List the tenant events' dead letters in keyset pages, newest first."""

from __future__ import annotations

from uuid import UUID

import attrs

from outbox.application.errors import InvalidField
from outbox.application.operator.event_ports import EventOperatorStore
from outbox.application.operator.event_views import EventDeadLetter
from outbox.application.operator.staff_actor import StaffActor
from outbox.application.operator.views import KeysetPage

DEFAULT_LIMIT = 50
MAX_LIMIT = 500


def check_page(limit: int, after: UUID | None, before: UUID | None) -> None:
    """Raise InvalidField for a limit out of range or two cursors."""
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidField("limit", f"must be between 1 and {MAX_LIMIT}")
    if after is not None and before is not None:
        raise InvalidField("before", "give either after or before, not both")


@attrs.frozen(kw_only=True)
class EventDeadLetterQuery:
    """One page of one organization's (or every) dead letters, unresolved ones or all."""

    actor: StaffActor | None = None
    organization_id: UUID | None = None
    unresolved_only: bool = False
    after: UUID | None = None
    before: UUID | None = None
    limit: int = DEFAULT_LIMIT


@attrs.frozen(kw_only=True)
class ListEventDeadLetters:
    """Asks the store for one row more than the page to learn whether the list goes on."""

    store: EventOperatorStore

    async def __call__(self, query: EventDeadLetterQuery) -> KeysetPage[EventDeadLetter]:
        """The page; raises InvalidField (limit, two cursors), InvalidRequest (a cursor that
        names no dead letter), StaffRequired or StepUpRequired."""
        check_page(query.limit, query.after, query.before)
        rows = await self.store.dead_letters(
            actor=query.actor,
            organization_id=query.organization_id,
            unresolved_only=query.unresolved_only,
            after=query.after,
            before=query.before,
            limit=query.limit + 1,
        )
        return KeysetPage.of(rows, limit=query.limit, after=query.after, before=query.before)
