"""List the registered event types: module, versions, retirement (``outboxctl events types``)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from outbox.application.operator.event_ports import EventCatalog
from outbox.application.operator.event_views import EventTypeView


@attrs.frozen(kw_only=True)
class ListEventTypes:
    """Reads the catalogue as the database operator."""

    catalog: EventCatalog

    async def __call__(self) -> Sequence[EventTypeView]:
        """Every event type by code; raises PermissionDenied for another connection."""
        return await self.catalog.event_types()
