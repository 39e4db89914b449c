"""The console's overview: both outboxes' backlogs and last hour, consumers' lag, the pauses,
and how many published messages stand in each delivery state."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from outbox.application.delivery.observe_delivery_states import DeliveryStateGauge
from outbox.application.delivery.views import Backlog
from outbox.application.events.consumer_ports import ConsumerAdmin, ConsumerLag
from outbox.application.events.operator_ports import EventOperatorStore
from outbox.application.events.views import OrganizationBacklog
from outbox.application.operator.console_ports import ConsoleReads, ProviderPauseStore
from outbox.application.operator.console_views import (
    ActivityMinute,
    EventActivityMinute,
    ProviderPause,
)
from outbox.application.operator.ports import OperatorStore
from outbox.application.staff import StaffActor

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
    delivery_states: Mapping[str, int] = attrs.field(factory=dict)
    event_activity: tuple[EventActivityMinute, ...] = ()


@attrs.frozen(kw_only=True)
class ShowConsoleOverview:
    """Reads each part through its staff-gated store (each checks the elevation again).

    The delivery-state counts are the metrics' gauge (aggregate numbers, no identity), read
    after the gated parts have checked the caller.
    """

    store: OperatorStore
    events: EventOperatorStore
    reads: ConsoleReads
    pauses: ProviderPauseStore
    consumers: ConsumerAdmin  # the consumers' own controls, read as the staff member
    delivery: DeliveryStateGauge | None = None

    async def __call__(self, actor: StaffActor) -> ConsoleOverview:
        """The overview; raises StaffRequired or StepUpRequired for a caller refused."""
        security = await self.store.backlog(actor=actor)
        organizations = tuple(await self.events.backlog(actor=actor, limit=TOP_ORGANIZATIONS))
        consumers = tuple(await self.consumers.lag(actor=actor))
        activity = tuple(await self.reads.activity(actor=actor, minutes=HOUR))
        event_activity = tuple(await self.reads.event_activity(actor=actor, minutes=HOUR))
        pauses = tuple(await self.pauses.pauses(actor=actor))
        delivery = await self.delivery.delivery_state_counts() if self.delivery else {}
        return ConsoleOverview(
            security=security,
            organizations=organizations,
            consumers=consumers,
            activity=activity,
            pauses=pauses,
            delivery_states=dict(delivery),
            event_activity=event_activity,
        )
