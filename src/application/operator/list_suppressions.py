"""List suppressions (``outboxctl suppressions list``, the staff route)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from outbox.application.operator.suppression_ports import SuppressionStore
from outbox.application.operator.suppression_views import SuppressionView
from outbox.application.staff import StaffActor

DEFAULT_LIMIT = 50
MAX_LIMIT = 1000


@attrs.frozen(kw_only=True)
class SuppressionQuery:
    """Which suppressions, and who asks (None: the database operator)."""

    include_lifted: bool = False
    limit: int = DEFAULT_LIMIT
    actor: StaffActor | None = None


@attrs.frozen(kw_only=True)
class ListSuppressions:
    """Reads suppressions through the staff-gated store."""

    store: SuppressionStore

    async def __call__(self, query: SuppressionQuery) -> Sequence[SuppressionView]:
        """The suppressions, newest first; raises StaffRequired or StepUpRequired."""
        return await self.store.suppressions(
            actor=query.actor, include_lifted=query.include_lifted, limit=query.limit
        )
