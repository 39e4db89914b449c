"""The operator use cases an entry point serves (staff HTTP routes, ``outboxctl``)."""

from __future__ import annotations

import attrs

from outbox.application.delivery.observe_delivery_states import ObserveDeliveryStates
from outbox.application.delivery.operations import MessageOperations
from outbox.application.events.consumer_operations import ConsumerOperations
from outbox.application.events.operations import EventOperations
from outbox.application.operator.break_glass_step_up import BreakGlassStepUp
from outbox.application.operator.console_ports import ProviderPauseStore, WorkerBoard
from outbox.application.operator.doctor import ObserveHealth
from outbox.application.operator.grant_staff import GrantStaff
from outbox.application.operator.pause_provider import PauseProvider, ResumeProvider
from outbox.application.operator.reissue_dead_letter import ReissueDeadLetter
from outbox.application.operator.require_elevation import RequireElevation
from outbox.application.operator.resolve_staff_member import ResolveStaffMember
from outbox.application.operator.revoke_staff import RevokeStaff
from outbox.application.ports import Telemetry


@attrs.frozen(kw_only=True)
class OperatorServices:
    """Every operator use case, built once by the composition root."""

    messages: MessageOperations
    reissue_dead_letter: ReissueDeadLetter
    grant_staff: GrantStaff
    revoke_staff: RevokeStaff
    resolve_staff_member: ResolveStaffMember
    require_elevation: RequireElevation
    events: EventOperations
    telemetry: Telemetry
    observe_delivery_states: ObserveDeliveryStates
    # Provider pauses: the console, the staff routes and the break-glass CLI share them.
    pause_provider: PauseProvider
    resume_provider: ResumeProvider
    pauses: ProviderPauseStore
    consumers: ConsumerOperations
    workers: WorkerBoard
    break_glass_step_up: BreakGlassStepUp
    observe_health: ObserveHealth  # the doctor's readings as /metrics gauges
