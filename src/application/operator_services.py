"""The operator use cases an entry point serves (staff HTTP routes, ``outboxctl``)."""

from __future__ import annotations

import attrs

from application.grant_staff import GrantStaff
from application.list_dead_letters import ListDeadLetters
from application.observe_backlog import ObserveBacklog
from application.ports import Telemetry
from application.reissue_dead_letter import ReissueDeadLetter
from application.requeue_dead_letter import RequeueDeadLetter
from application.require_elevation import RequireElevation
from application.resolve_staff_member import ResolveStaffMember
from application.revoke_staff import RevokeStaff
from application.show_backlog import ShowBacklog
from application.show_message import ShowMessage


@attrs.frozen(kw_only=True)
class OperatorServices:
    """Every operator use case, built once by the composition root."""

    show_backlog: ShowBacklog
    list_dead_letters: ListDeadLetters
    show_message: ShowMessage
    requeue_dead_letter: RequeueDeadLetter
    reissue_dead_letter: ReissueDeadLetter
    grant_staff: GrantStaff
    revoke_staff: RevokeStaff
    resolve_staff_member: ResolveStaffMember
    require_elevation: RequireElevation
    observe_backlog: ObserveBacklog
    telemetry: Telemetry
