"""The operator use cases an entry point serves (staff HTTP routes, ``outboxctl``)."""

from __future__ import annotations

import attrs

from outbox.application.delivery.observe_delivery_states import ObserveDeliveryStates
from outbox.application.events.operations import EventOperations
from outbox.application.operator.change_suppression import ChangeSuppression
from outbox.application.operator.grant_staff import GrantStaff
from outbox.application.operator.list_dead_letters import ListDeadLetters
from outbox.application.operator.list_messages import ListMessages
from outbox.application.operator.list_suppressions import ListSuppressions
from outbox.application.operator.observe_backlog import ObserveBacklog
from outbox.application.operator.reissue_dead_letter import ReissueDeadLetter
from outbox.application.operator.requeue_dead_letter import RequeueDeadLetter
from outbox.application.operator.require_elevation import RequireElevation
from outbox.application.operator.resolve_staff_member import ResolveStaffMember
from outbox.application.operator.revoke_staff import RevokeStaff
from outbox.application.operator.show_backlog import ShowBacklog
from outbox.application.operator.show_message import ShowMessage
from outbox.application.operator.show_receipts import ShowReceipts
from outbox.application.ports import Telemetry


@attrs.frozen(kw_only=True)
class OperatorServices:
    """Every operator use case, built once by the composition root."""

    show_backlog: ShowBacklog
    list_dead_letters: ListDeadLetters
    list_messages: ListMessages
    show_message: ShowMessage
    requeue_dead_letter: RequeueDeadLetter
    reissue_dead_letter: ReissueDeadLetter
    grant_staff: GrantStaff
    revoke_staff: RevokeStaff
    resolve_staff_member: ResolveStaffMember
    require_elevation: RequireElevation
    observe_backlog: ObserveBacklog
    events: EventOperations
    telemetry: Telemetry
    # Receipts and suppression.
    show_receipts: ShowReceipts
    list_suppressions: ListSuppressions
    change_suppression: ChangeSuppression
    observe_delivery_states: ObserveDeliveryStates
