"""The console's overview: both outboxes' backlogs, consumers' lag, the last hour, the pauses."""

from __future__ import annotations

import attrs

from application.operator.console_ports import ConsoleReads, ProviderPauseStore
from application.operator.console_views import ActivityMinute, ConsumerLag, ProviderPause
from application.operator.event_ports import EventOperatorStore
from application.operator.event_views import OrganizationBacklog
from application.operator.ports import OperatorStore
from application.operator.staff_actor import StaffActor
from application.operator.views import Backlog

HOUR = 60
TOP_ORGANIZATIONS = 20


@attrs.frozen(kw_only=True)
class ConsoleOverview:
    """Everything the overview page shows, read for one staff member."""

    security: Backlog
    organizations: tuple[OrganizationBacklog, ...]
    consumers: tuple[ConsumerLag, ...]
    activity: tuple[ActivityMinute, ...]
    pauses: tuple[ProviderPause, ...]


@attrs.frozen(kw_only=True)
class ShowConsoleOverview:
    """Reads each part through its staff-gated store (each checks the elevation again)."""

    store: OperatorStore
    events: EventOperatorStore
    reads: ConsoleReads
    pauses: ProviderPauseStore

    async def __call__(self, actor: StaffActor) -> ConsoleOverview:
        """The overview; raises StaffRequired or StepUpRequired for a caller refused."""
        return ConsoleOverview(
            security=await self.store.backlog(actor=actor),
            organizations=tuple(await self.events.backlog(actor=actor, limit=TOP_ORGANIZATIONS)),
            consumers=tuple(await self.reads.consumer_lag(actor=actor)),
            activity=tuple(await self.reads.activity(actor=actor, minutes=HOUR)),
            pauses=tuple(await self.pauses.pauses(actor=actor)),
        )
