"""Show the backlog: messages per state and the age of the oldest due message (SPEC §11)."""

from __future__ import annotations

from uuid import UUID

import attrs

from application.operator.ports import OperatorStore
from application.operator.views import Backlog


@attrs.frozen(kw_only=True)
class BacklogQuery:
    """Who asks: a staff identity, or None for the database operator."""

    actor: UUID | None = None


@attrs.frozen(kw_only=True)
class ShowBacklog:
    """Reads the backlog through the staff-gated store."""

    store: OperatorStore

    async def __call__(self, query: BacklogQuery) -> Backlog:
        """The backlog; raises StaffRequired for a caller who is not staff."""
        return await self.store.backlog(actor=query.actor)
