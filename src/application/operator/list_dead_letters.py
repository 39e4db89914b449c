"""List dead letters in keyset pages, newest first, destinations masked (SPEC §11)."""

from __future__ import annotations

from uuid import UUID

import attrs

from application.errors import InvalidField
from application.operator.ports import OperatorStore
from application.operator.staff_actor import StaffActor
from application.operator.views import DeadLetterPage

DEFAULT_LIMIT = 50
MAX_LIMIT = 500


@attrs.frozen(kw_only=True)
class DeadLetterQuery:
    """One page: older than ``after`` or newer than ``before`` (at most one), ``limit`` rows."""

    actor: StaffActor | None = None
    after: UUID | None = None
    before: UUID | None = None
    limit: int = DEFAULT_LIMIT


@attrs.frozen(kw_only=True)
class ListDeadLetters:
    """Asks the store for one row more than the page to learn whether the list goes on."""

    store: OperatorStore

    async def __call__(self, query: DeadLetterQuery) -> DeadLetterPage:
        """The page; raises InvalidField for a bad limit or two cursors, InvalidRequest for a
        cursor that names no dead letter, StaffRequired or StepUpRequired for a caller the
        store refuses."""
        if not 1 <= query.limit <= MAX_LIMIT:
            raise InvalidField("limit", f"must be between 1 and {MAX_LIMIT}")
        if query.after is not None and query.before is not None:
            raise InvalidField("before", "give either after or before, not both")
        rows = list(
            await self.store.dead_letters(
                actor=query.actor, after=query.after, before=query.before, limit=query.limit + 1
            )
        )
        more = len(rows) > query.limit
        if query.before is None:
            return DeadLetterPage(
                items=tuple(rows[: query.limit]), has_older=more, has_newer=query.after is not None
            )
        # Going back, the extra row is the newest one: beyond the page's top edge.
        return DeadLetterPage(
            items=tuple(rows[1:] if more else rows), has_older=True, has_newer=more
        )
