"""The operator's controls over consumers, for staff (the admin listener) and the database
operator (``outboxctl consumers``): lag, dead letters, replay, pause and resume.

A change needs a reason from staff (the database operator's may omit it); each is audited
by the database and reported.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import attrs

from outbox.application.errors import InvalidField
from outbox.application.events.consumer_ports import ConsumerAdmin, ConsumerDeadLetter, ConsumerLag
from outbox.application.ports import Telemetry
from outbox.application.staff import StaffActor, check_page, check_reason


@attrs.frozen(kw_only=True)
class ConsumerReplay:
    """Deliver again what the consumer's subscriptions match, published from a sequence or
    a time (exactly one)."""

    consumer: str
    actor: StaffActor | None = None
    from_sequence: int | None = None
    since: datetime | None = None
    reason: str | None = None


@attrs.frozen(kw_only=True)
class ConsumerOperations:
    """The use cases over ConsumerAdmin; every method raises StaffRequired or
    StepUpRequired for a caller the database refuses, InvalidRequest for an unknown
    consumer."""

    admin: ConsumerAdmin
    telemetry: Telemetry

    async def lag(self, *, actor: StaffActor | None = None) -> Sequence[ConsumerLag]:
        """Every consumer with its lag, by code."""
        return await self.admin.lag(actor=actor)

    async def dead_letters(
        self, consumer: str, *, before: int | None, limit: int, actor: StaffActor | None = None
    ) -> Sequence[ConsumerDeadLetter]:
        """A page of the consumer's dead letters, newest first."""
        check_page(limit, None, None)
        return await self.admin.dead_letters(consumer, before=before, limit=limit, actor=actor)

    async def replay(self, command: ConsumerReplay) -> int:
        """The deliveries written in a new round; raises InvalidField."""
        if (command.from_sequence is None) == (command.since is None):
            raise InvalidField("from", "give exactly one of a publication sequence and a time")
        if command.from_sequence is not None and command.from_sequence < 1:
            raise InvalidField("from", "publication sequences start at 1")
        reason = self._reason(command.actor, command.reason)
        written = await self.admin.replay(
            command.consumer,
            from_sequence=command.from_sequence,
            since=command.since,
            actor=command.actor,
            reason=reason,
        )
        self._report("operator.consumer.replayed", command.consumer, command.actor, written)
        return written

    async def set_active(
        self,
        consumer: str,
        *,
        active: bool,
        actor: StaffActor | None = None,
        reason: str | None = None,
    ) -> bool:
        """Pause or resume; whether it changed."""
        checked = self._reason(actor, reason)
        changed = await self.admin.set_active(consumer, active=active, actor=actor, reason=checked)
        name = "operator.consumer.resumed" if active else "operator.consumer.paused"
        self._report(name, consumer, actor, int(changed))
        return changed

    @staticmethod
    def _reason(actor: StaffActor | None, reason: str | None) -> str | None:
        if reason is None and actor is None:
            return None
        return check_reason(reason or "")

    def _report(self, name: str, consumer: str, actor: StaffActor | None, count: int) -> None:
        self.telemetry.event(
            name,
            consumer=consumer,
            actor_id=None if actor is None else str(actor.identity_id),
            count=count,
        )
