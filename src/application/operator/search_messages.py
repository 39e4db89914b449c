"""Search messages as staff: the filters of ``outboxctl messages list``, gated by a step-up."""

from __future__ import annotations

from uuid import UUID

import attrs

from outbox.application.errors import InvalidField
from outbox.application.operator.console_ports import StaffMessageSearch
from outbox.application.operator.list_dead_letters import DEFAULT_LIMIT, MAX_LIMIT
from outbox.application.operator.message_filters import MessageFilter, digest_of_destination
from outbox.application.operator.views import MessagePage
from outbox.application.staff import StaffActor


@attrs.frozen(kw_only=True)
class StaffSearch:
    """One page of the messages that meet ``where`` and, if given, go to ``destination``.

    ``destination`` is matched on its digest and never leaves the process as it is; without
    it, ``where.destination_digest`` (a digest computed earlier) is matched.
    """

    actor: StaffActor
    where: MessageFilter = attrs.field(factory=MessageFilter)
    destination: str | None = attrs.field(default=None, repr=False)
    after: UUID | None = None
    before: UUID | None = None
    limit: int = DEFAULT_LIMIT


@attrs.frozen(kw_only=True)
class SearchMessages:
    """Asks the store for one row more than the page to learn whether the list goes on."""

    search: StaffMessageSearch

    async def __call__(self, query: StaffSearch) -> MessagePage:
        """The page, newest first; raises InvalidField for a bad limit, two cursors, an empty
        time range or a destination that is no address, InvalidRequest for a cursor that
        names no message, StaffRequired or StepUpRequired for a caller the store refuses."""
        if not 1 <= query.limit <= MAX_LIMIT + 1:
            raise InvalidField("limit", f"must be between 1 and {MAX_LIMIT}")
        if query.after is not None and query.before is not None:
            raise InvalidField("before", "give either after or before, not both")
        since, until = query.where.since, query.where.until
        if since is not None and until is not None and until <= since:
            raise InvalidField("until", "must be later than since")
        where = query.where
        if query.destination is not None:
            where = attrs.evolve(where, destination_digest=digest_of_destination(query.destination))
        rows = await self.search.messages(
            actor=query.actor,
            where=where,
            after=query.after,
            before=query.before,
            limit=query.limit + 1,
        )
        return MessagePage.of(rows, limit=query.limit, after=query.after, before=query.before)
