"""List dead letters in keyset pages, newest first, destinations masked."""

from __future__ import annotations

from uuid import UUID

import attrs

from outbox.application.errors import InvalidField
from outbox.application.operator.ports import MessageLog, OperatorStore
from outbox.application.operator.views import DeadLetterPage, DeadLetterSummary, Repair
from outbox.application.staff import StaffActor

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
    """Asks the store for one row more than the page to learn whether the list goes on.

    The database operator (no actor) also sees what became of each dead letter: reissued or
    requeued, as which message.
    """

    store: OperatorStore
    log: MessageLog

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
        if query.actor is None and rows:
            repairs = await self.log.repairs([row.id for row in rows])
            rows = [_repaired(row, repairs.get(row.id)) for row in rows]
        return DeadLetterPage.of(rows, limit=query.limit, after=query.after, before=query.before)


def _repaired(row: DeadLetterSummary, repair: Repair | None) -> DeadLetterSummary:
    return row if repair is None else attrs.evolve(row, repair=repair)
