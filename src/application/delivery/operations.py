"""The operator's reads and repairs of the queue: the backlog, dead letters and messages in
keyset pages (destinations masked), one message's story and receipts, a requeue, the
suppressions, and the backlog gauges.

A query's ``actor`` is the staff member who asks (None: the database operator, who also sees
each attempt's provider detail and what became of each dead letter). Every staff-gated call
raises StaffRequired or StepUpRequired for a caller the store refuses.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Sequence
from uuid import UUID

import attrs

from outbox.application.delivery.copy_routes import CopyRouter
from outbox.application.delivery.errors import DeadLetterRefused, MessageNotFound
from outbox.application.delivery.message_filters import MessageFilter, digest_of_destination
from outbox.application.delivery.operator_ports import (
    BacklogGauge,
    MessageLog,
    MessageOperatorStore,
    StaffMessageSearch,
    SuppressionStore,
)
from outbox.application.delivery.views import (
    Backlog,
    CopyReceipt,
    DeadLetterPage,
    MessageDetail,
    MessagePage,
    ReceiptView,
    SuppressionChange,
    SuppressionView,
)
from outbox.application.errors import InvalidField, InvalidRequest
from outbox.application.ports import Ids, Telemetry
from outbox.application.staff import (
    DEFAULT_LIMIT,
    MAX_REASON,
    StaffActor,
    check_idempotency_key,
    check_page,
    check_reason,
    reported_repair,
)
from outbox.domain.channels import Channel
from outbox.domain.delivery.delivery_states import DeliveryState, advance
from outbox.domain.delivery.receipts import ReceiptEvent
from outbox.domain.destinations import channel_of, normalize
from outbox.domain.errors import InvalidDestination

SUPPRESSIONS_MAX = 1000


@attrs.frozen(kw_only=True)
class BacklogQuery:
    """Who asks."""

    actor: StaffActor | None = None


@attrs.frozen(kw_only=True)
class DeadLetterQuery:
    """One page: older than ``after`` or newer than ``before`` (at most one), ``limit`` rows."""

    actor: StaffActor | None = None
    after: UUID | None = None
    before: UUID | None = None
    limit: int = DEFAULT_LIMIT


@attrs.frozen(kw_only=True)
class MessageQuery:
    """Which message, and who asks."""

    message_id: UUID
    actor: StaffActor | None = None


ReceiptsQuery = MessageQuery


@attrs.frozen(kw_only=True)
class MessageListQuery:
    """One page of the messages that meet ``where`` and, if given, go to ``destination``.

    ``destination`` is an e-mail address or E.164 number; it is matched on its digest and
    never leaves the process as it is; without it, ``where.destination_digest`` (a digest
    computed earlier) is matched. ``actor`` None is the database operator's log.
    """

    actor: StaffActor | None = None
    where: MessageFilter = attrs.field(factory=MessageFilter)
    destination: str | None = attrs.field(default=None, repr=False)
    after: UUID | None = None
    before: UUID | None = None
    limit: int = DEFAULT_LIMIT


StaffSearch = MessageListQuery


@attrs.frozen(kw_only=True)
class RequeueCommand:
    """The acting staff member, the dead letter, and the request's idempotency key.

    Without a key the request is not idempotent (each call is a new request). ``reason`` (the
    console asks for one) is kept in the audit row.
    """

    actor: StaffActor
    message_id: UUID
    idempotency_key: str | None = None
    reason: str | None = None


@attrs.frozen(kw_only=True)
class MessageReceipts:
    """The receipts of one message, oldest first, and the state they add up to.

    ``states_after`` pairs with ``receipts``: the state the message stood in after each.
    """

    message_id: UUID
    delivery_state: DeliveryState
    receipts: Sequence[ReceiptView]
    states_after: Sequence[DeliveryState] = ()


@attrs.frozen(kw_only=True)
class SuppressionQuery:
    """Which suppressions, and who asks."""

    include_lifted: bool = False
    limit: int = DEFAULT_LIMIT
    actor: StaffActor | None = None


class SuppressionAction(enum.StrEnum):
    """Which change."""

    ADD = "add"
    LIFT = "lift"


@attrs.frozen(kw_only=True)
class SuppressionCommand:
    """One change: what, to which destination, why, and who acts. ``channel`` is the
    destination's natural one unless given (WhatsApp)."""

    action: SuppressionAction
    destination: str = attrs.field(repr=False)
    reason: str
    channel: Channel | None = None
    actor: StaffActor | None = None


async def repair_of(dead_letter: DeadLetterPage, log: MessageLog) -> DeadLetterPage:
    """``dead_letter``'s rows with what became of each (reissued or requeued, as which)."""
    if not dead_letter.items:
        return dead_letter
    repairs = await log.repairs([row.id for row in dead_letter.items])
    items = tuple(
        row if row.id not in repairs else attrs.evolve(row, repair=repairs[row.id])
        for row in dead_letter.items
    )
    return attrs.evolve(dead_letter, items=items)


async def reported_dead_letter_copy(
    copying: Awaitable[CopyReceipt],
    action: str,
    actor: StaffActor,
    dead_letter_id: UUID,
    telemetry: Telemetry,
) -> CopyReceipt:
    """Await a reissue or requeue (``action``) and report it: done, refused, or refused to a
    non-staff caller."""

    def done(receipt: CopyReceipt) -> tuple[str, dict[str, str | bool | None]]:
        return f"operator.dead_letter.{action}d", {
            "dead_letter_id": str(receipt.dead_letter_id),
            "message_id": str(receipt.message_id),
            "replayed": receipt.replayed,
            # the paused provider the copy waits for, named only when there is one
            **({"waits_for": receipt.waits_for} if receipt.waits_for else {}),
        }

    return await reported_repair(
        copying,
        telemetry=telemetry,
        action=action,
        actor=actor,
        dead_letter_id=dead_letter_id,
        refused=(
            DeadLetterRefused,
            f"operator.{action}.refused",
            lambda error: error.refusal.value,
        ),
        done=done,
    )


@attrs.frozen(kw_only=True)
class MessageOperations:
    """Every operator use case over the queue, through the staff-gated store (staff and the
    database operator), the database operator's log, and the suppression store."""

    store: MessageOperatorStore
    log: MessageLog
    search: StaffMessageSearch
    suppressions: SuppressionStore
    gauge: BacklogGauge
    ids: Ids
    telemetry: Telemetry
    router: CopyRouter = attrs.field(factory=CopyRouter)  # refuses a copy no provider sends

    async def show_backlog(self, query: BacklogQuery) -> Backlog:
        """Messages per state and the age of the oldest due one."""
        return await self.store.backlog(actor=query.actor)

    async def list_dead_letters(self, query: DeadLetterQuery) -> DeadLetterPage:
        """The page, newest first; raises InvalidField for a bad limit or two cursors,
        InvalidRequest for a cursor that names no dead letter."""
        check_page(query.limit, query.after, query.before)
        rows = await self.store.dead_letters(
            actor=query.actor, after=query.after, before=query.before, limit=query.limit + 1
        )
        page = DeadLetterPage.of(rows, limit=query.limit, after=query.after, before=query.before)
        return page if query.actor is not None else await repair_of(page, self.log)

    async def list_messages(self, query: MessageListQuery) -> MessagePage:
        """The page, newest first; raises InvalidField for a bad limit, two cursors, an empty
        time range or a destination that is no address, InvalidRequest for a cursor that
        names no message, PermissionDenied for the log to a connection that is not the
        database operator's."""
        check_page(query.limit, query.after, query.before)
        since, until = query.where.since, query.where.until
        if since is not None and until is not None and until <= since:
            raise InvalidField("until", "must be later than since")
        where = query.where
        if query.destination is not None or query.actor is None:
            where = attrs.evolve(where, destination_digest=digest_of_destination(query.destination))
        after, before, limit = query.after, query.before, query.limit + 1
        rows = await (
            self.log.messages(where=where, after=after, before=before, limit=limit)
            if query.actor is None
            else self.search.messages(
                actor=query.actor, where=where, after=after, before=before, limit=limit
            )
        )
        return MessagePage.of(rows, limit=query.limit, after=query.after, before=query.before)

    async def show_message(self, query: MessageQuery) -> MessageDetail:
        """The message, masked, with its attempts; raises MessageNotFound."""
        detail = await self.store.message(actor=query.actor, message_id=query.message_id)
        if detail is None:
            raise MessageNotFound(str(query.message_id))
        if query.actor is None:
            detail = attrs.evolve(detail, history=tuple(await self.log.history(query.message_id)))
        return detail

    async def requeue_dead_letter(self, command: RequeueCommand) -> CopyReceipt:
        """Enqueue a copy of a dead-lettered notification under a new id; the dead letter
        stays final. Raises MessageNotFound, DeadLetterRefused (NoProvider when no provider
        sends its channel), IdempotencyKeyReused, RequestInProgress or InvalidField (a
        malformed key or reason)."""
        key = check_idempotency_key(command.idempotency_key)
        reason = None if command.reason is None else check_reason(command.reason)
        return await reported_dead_letter_copy(
            self._requeue(command, key, reason),
            "requeue",
            command.actor,
            command.message_id,
            self.telemetry,
        )

    async def _requeue(
        self, command: RequeueCommand, key: str | None, reason: str | None
    ) -> CopyReceipt:
        waits_for = None
        detail = await self.store.message(actor=command.actor, message_id=command.message_id)
        # The store refuses the rest (and a message gone since); only a copy it would make
        # is routed.
        if detail is not None and detail.purpose.is_requeueable:
            waits_for = await self.router.waits_for(actor=command.actor, channel=detail.channel)
        new_id = self.ids.new_id()
        receipt = await self.store.requeue(
            actor=command.actor,
            message_id=command.message_id,
            new_message_id=new_id,
            idempotency_key=key or str(new_id),
            reason=reason,
        )
        return attrs.evolve(receipt, waits_for=waits_for)

    async def show_receipts(self, query: MessageQuery) -> MessageReceipts:
        """The receipts (none: accepted, or never sent) and the state they fold to, which is
        the state the database keeps (a test holds the two rules equal over every order)."""
        receipts = await self.suppressions.receipts(actor=query.actor, message_id=query.message_id)
        state, after = DeliveryState.ACCEPTED, []
        for receipt in receipts:
            state = advance(state, ReceiptEvent(receipt.event))
            after.append(state)
        return MessageReceipts(
            message_id=query.message_id,
            delivery_state=state,
            receipts=tuple(receipts),
            states_after=tuple(after),
        )

    async def list_suppressions(self, query: SuppressionQuery) -> Sequence[SuppressionView]:
        """The suppressions, newest first."""
        return await self.suppressions.suppressions(
            actor=query.actor, include_lifted=query.include_lifted, limit=query.limit
        )

    async def change_suppression(self, command: SuppressionCommand) -> SuppressionChange | None:
        """Add or lift a suppression by hand, audited with who acted and why; None for a lift
        of a destination not suppressed. The destination is normalised as every message's
        is, so the digest the database takes is the one its messages have.

        Raises InvalidRequest for a malformed destination or a missing reason.
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
        adding = command.action is SuppressionAction.ADD
        change = await (
            self.suppressions.add(
                actor=command.actor, destination=destination, channel=channel, reason=reason
            )
            if adding
            else self.suppressions.lift(actor=command.actor, destination=destination, reason=reason)
        )
        if change is not None and change.changed:
            self.telemetry.event(
                f"suppression.{'added' if adding else 'lifted'}",
                suppression_id=str(change.id),
                destination=change.destination,
                actor=str(command.actor.identity_id) if command.actor else "operator",
            )
        return change

    async def observe_backlog(self) -> Backlog:
        """Set the backlog gauges (``outbox_messages{state}``,
        ``outbox_oldest_due_age_seconds``, 0 when nothing is due); call it before a scrape."""
        backlog = await self.gauge.backlog()
        for state, count in backlog.by_state().items():
            self.telemetry.observe("outbox_messages", count, state=state.value)
        age = backlog.oldest_due_age.total_seconds() if backlog.oldest_due_age else 0.0
        self.telemetry.observe("outbox_oldest_due_age_seconds", age)
        return backlog
