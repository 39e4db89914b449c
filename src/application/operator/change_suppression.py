"""Add or lift a suppression by hand (``outboxctl suppressions add|lift``, the staff routes).

The destination is normalised as every message's is (an e-mail address lower-cased, a
phone number in E.164), so the digest the database takes is the one its messages have.
A reason is required: it goes into the audit with who acted.
"""

from __future__ import annotations

import enum

import attrs

from outbox.application.errors import InvalidRequest
from outbox.application.operator.suppression_ports import SuppressionStore
from outbox.application.operator.suppression_views import SuppressionChange
from outbox.application.ports import Telemetry
from outbox.application.staff import StaffActor
from outbox.domain.channels import Channel
from outbox.domain.destinations import channel_of, normalize
from outbox.domain.errors import InvalidDestination

MAX_REASON = 500


class SuppressionAction(enum.StrEnum):
    """Which change."""

    ADD = "add"
    LIFT = "lift"


@attrs.frozen(kw_only=True)
class SuppressionCommand:
    """One change: what, to which destination, why, and who acts (None: the database
    operator). ``channel`` is the destination's natural one unless given (WhatsApp)."""

    action: SuppressionAction
    destination: str = attrs.field(repr=False)
    reason: str
    channel: Channel | None = None
    actor: StaffActor | None = None


@attrs.frozen(kw_only=True)
class ChangeSuppression:
    """Adds or lifts a suppression, audited; reports ``suppression.added``/``.lifted``."""

    store: SuppressionStore
    telemetry: Telemetry

    async def __call__(self, command: SuppressionCommand) -> SuppressionChange | None:
        """What changed (None: a lift of a destination not suppressed).

        Raises InvalidRequest for a malformed destination or a missing reason, and
        StaffRequired or StepUpRequired for a caller the store refuses.
        """
        reason = command.reason.strip()
        if not reason or len(reason) > MAX_REASON:
            raise InvalidRequest(f"reason: required, at most {MAX_REASON} characters")
        try:
            channel = command.channel or channel_of(command.destination.strip())
            destination = normalize(
                Channel.EMAIL if channel is Channel.EMAIL else Channel.SMS, command.destination
            )
        except InvalidDestination:
            raise InvalidRequest("destination: not an e-mail address or E.164 number") from None
        if command.action is SuppressionAction.ADD:
            change: SuppressionChange | None = await self.store.add(
                actor=command.actor, destination=destination, channel=channel, reason=reason
            )
        else:
            change = await self.store.lift(
                actor=command.actor, destination=destination, reason=reason
            )
        if change is not None and change.changed:
            self.telemetry.event(
                f"suppression.{'added' if command.action is SuppressionAction.ADD else 'lifted'}",
                suppression_id=str(change.id),
                destination=change.destination,
                actor=str(command.actor.identity_id) if command.actor else "operator",
            )
        return change
