"""The operator's reads and repairs of the tenant events outbox: the backlog per organization,
dead letters and parked aggregates in keyset pages, one event's story, republish and release
(each audited and idempotent), the metrics gauges and the catalogue of event types.

A query's ``actor`` is the staff member who asks (None: the database operator).
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from datetime import datetime
from uuid import UUID

import attrs

from outbox.application.errors import InvalidField
from outbox.application.events.errors import EventNotFound, EventRepairRefused
from outbox.application.events.operator_ports import (
    EventBacklogGauge,
    EventCatalog,
    EventOperatorStore,
)
from outbox.application.events.views import (
    BulkEventAction,
    BulkOutcome,
    EventDeadLetter,
    EventDetail,
    EventFilter,
    EventState,
    EventSummary,
    EventTypeView,
    OrganizationBacklog,
    ParkedAggregate,
    RepairAction,
    RepairReceipt,
)
from outbox.application.ports import Ids, Telemetry
from outbox.application.staff import (
    DEFAULT_LIMIT,
    KeysetPage,
    StaffActor,
    check_idempotency_key,
    check_page,
    check_reason,
    reported_repair,
)

BACKLOG_MAX = 1000
BULK_MAX = 1000  # events one bulk request changes at most; the rest is another request
DONE = {
    RepairAction.REPUBLISH: "operator.event.republished",
    RepairAction.RELEASE: "operator.event.released",
}
GAUGES = (
    "outbox_tenant_events",
    "outbox_tenant_events_oldest_due_age_seconds",
    "outbox_tenant_events_dead_letters",
    "outbox_tenant_events_parked_aggregates",
)


@attrs.frozen(kw_only=True)
class EventBacklogQuery:
    """Who asks and how many organizations at most."""

    actor: StaffActor | None = None
    limit: int = DEFAULT_LIMIT


@attrs.frozen(kw_only=True)
class EventDeadLetterQuery:
    """One page of one organization's (or every) dead letters, unresolved ones or all."""

    actor: StaffActor | None = None
    organization_id: UUID | None = None
    unresolved_only: bool = False
    after: UUID | None = None
    before: UUID | None = None
    limit: int = DEFAULT_LIMIT


@attrs.frozen(kw_only=True)
class ParkedQuery:
    """One page of one organization's (or every) parked aggregates, newest dead letter first."""

    actor: StaffActor | None = None
    organization_id: UUID | None = None
    after: UUID | None = None
    before: UUID | None = None
    limit: int = DEFAULT_LIMIT


@attrs.frozen(kw_only=True)
class EventQuery:
    """Which event, and who asks."""

    event_id: UUID
    actor: StaffActor | None = None


@attrs.frozen(kw_only=True)
class RepairCommand:
    """The acting staff member, the dead letter, why, and the request's idempotency key.

    Without a key the request is not idempotent (each call is a new request).
    """

    actor: StaffActor
    dead_letter_id: UUID
    reason: str
    idempotency_key: str | None = None


RepublishCommand = ReleaseCommand = RepairCommand


@attrs.frozen(kw_only=True)
class EventSearchQuery:
    """One page of the events ``where`` matches, in ``state`` when given, newest first,
    appended before the event of sequence ``before`` (None: from the newest)."""

    actor: StaffActor | None = None
    state: EventState | None = None
    where: EventFilter = attrs.field(factory=EventFilter)
    before: int | None = None
    limit: int = DEFAULT_LIMIT


@attrs.frozen(kw_only=True)
class EventSearchPage:
    """A page of events, newest first; ``older`` is the ``before`` of the next page."""

    items: tuple[EventSummary, ...]
    older: int | None


@attrs.frozen(kw_only=True)
class BulkEventQuery:
    """What ``action`` would change of what ``where`` matches, as of ``as_of`` (None: now)."""

    actor: StaffActor | None
    action: BulkEventAction
    where: EventFilter = attrs.field(factory=EventFilter)
    as_of: datetime | None = None


@attrs.frozen(kw_only=True)
class BulkEventPreview:
    """How many events the action would change, read at ``as_of`` (send it back with the
    command: nothing that arrived since is touched)."""

    action: BulkEventAction
    count: int
    as_of: datetime


@attrs.frozen(kw_only=True)
class BulkEventCommand:
    """Apply ``action`` to what ``where`` matched at ``as_of`` (a preview's), at most
    ``limit``, for ``actor``, with ``reason``; the key makes a resend change nothing more."""

    actor: StaffActor
    action: BulkEventAction
    where: EventFilter
    as_of: datetime
    reason: str
    idempotency_key: str | None = None
    limit: int = BULK_MAX


@attrs.frozen(kw_only=True)
class EventOperations:
    """Every operator use case over the tenant events outbox, through the staff-gated store.

    A page is read as one row more than asked, to learn whether the list goes on. Every
    method raises StaffRequired or StepUpRequired for a caller the store refuses.
    """

    store: EventOperatorStore
    gauge: EventBacklogGauge
    catalog: EventCatalog
    ids: Ids
    telemetry: Telemetry

    async def show_backlog(self, query: EventBacklogQuery) -> Sequence[OrganizationBacklog]:
        """The organizations, the largest backlog first; raises InvalidField for a bad limit."""
        if not 1 <= query.limit <= BACKLOG_MAX:
            raise InvalidField("limit", f"must be between 1 and {BACKLOG_MAX}")
        return await self.store.backlog(actor=query.actor, limit=query.limit)

    async def list_dead_letters(self, query: EventDeadLetterQuery) -> KeysetPage[EventDeadLetter]:
        """The page; raises InvalidField (limit, two cursors) or InvalidRequest (a cursor that
        names no dead letter)."""
        check_page(query.limit, query.after, query.before)
        rows = await self.store.dead_letters(
            actor=query.actor,
            organization_id=query.organization_id,
            unresolved_only=query.unresolved_only,
            after=query.after,
            before=query.before,
            limit=query.limit + 1,
        )
        return KeysetPage.of(rows, limit=query.limit, after=query.after, before=query.before)

    async def list_parked(self, query: ParkedQuery) -> KeysetPage[ParkedAggregate]:
        """The page of parked aggregates; raises as ``list_dead_letters``."""
        check_page(query.limit, query.after, query.before)
        rows = await self.store.parked(
            actor=query.actor,
            organization_id=query.organization_id,
            after=query.after,
            before=query.before,
            limit=query.limit + 1,
        )
        return KeysetPage.of(rows, limit=query.limit, after=query.after, before=query.before)

    async def search(self, query: EventSearchQuery) -> EventSearchPage:
        """The page; raises InvalidField for a bad limit or an empty time window."""
        check_page(query.limit, None, None)
        _check_window(query.where)
        rows = await self.store.search(
            actor=query.actor,
            state=query.state,
            where=query.where,
            before=query.before,
            limit=query.limit + 1,
        )
        items = tuple(rows[: query.limit])
        older = items[-1].sequence if len(rows) > query.limit else None
        return EventSearchPage(items=items, older=older)

    async def preview_bulk(self, query: BulkEventQuery) -> BulkEventPreview:
        """How many events the action would change now (or at ``as_of``)."""
        _check_window(query.where)
        count, as_of = await self.store.count_bulk(
            actor=query.actor, action=query.action, where=query.where, as_of=query.as_of
        )
        return BulkEventPreview(action=query.action, count=count, as_of=as_of)

    async def bulk_repair(self, command: BulkEventCommand) -> BulkOutcome:
        """Apply the action; raises InvalidField (reason, key, limit, window), StaffRequired
        or StepUpRequired."""
        reason = check_reason(command.reason)
        key = check_idempotency_key(command.idempotency_key)
        if not 1 <= command.limit <= BULK_MAX:
            raise InvalidField("limit", f"must be between 1 and {BULK_MAX}")
        _check_window(command.where)
        outcome = await self.store.bulk_repair(
            actor=command.actor,
            action=command.action,
            where=command.where,
            as_of=command.as_of,
            reason=reason,
            idempotency_key=key or str(self.ids.new_id()),
            limit=command.limit,
        )
        self.telemetry.event(
            f"operator.events.bulk_{command.action.value}",
            actor_id=str(command.actor.identity_id),
            changed=outcome.changed,
            replayed=outcome.replayed,
            remaining=outcome.remaining,
        )
        return outcome

    async def show_event(self, query: EventQuery) -> EventDetail:
        """The event with its records and attempts; raises EventNotFound."""
        detail = await self.store.event(actor=query.actor, event_id=query.event_id)
        if detail is None:
            raise EventNotFound(str(query.event_id))
        return detail

    async def republish(self, command: RepairCommand) -> RepairReceipt:
        """Add a new record of the dead letter's event under a new id; the dead one stays final.
        It keeps the event's place in its aggregate, so it is published before the aggregate's
        later events.

        Raises InvalidField (reason, key), DeadLetterNotFound, EventRepairRefused,
        IdempotencyKeyReused or RequestInProgress.
        """
        reason = check_reason(command.reason)
        key = check_idempotency_key(command.idempotency_key)
        new_id = self.ids.new_id()
        repairing = self.store.republish(
            actor=command.actor,
            dead_letter_id=command.dead_letter_id,
            new_record_id=new_id,
            reason=reason,
            idempotency_key=key or str(new_id),
        )
        return await self._reported(repairing, RepairAction.REPUBLISH, command)

    async def release(self, command: RepairCommand) -> RepairReceipt:
        """Resolve the dead letter 'released', audited; it is never published and the
        aggregate's later events flow. Raises as ``republish``."""
        reason = check_reason(command.reason)
        key = check_idempotency_key(command.idempotency_key)
        repairing = self.store.release(
            actor=command.actor,
            dead_letter_id=command.dead_letter_id,
            reason=reason,
            idempotency_key=key or str(self.ids.new_id()),
        )
        return await self._reported(repairing, RepairAction.RELEASE, command)

    async def _reported(
        self, repairing: Awaitable[RepairReceipt], action: RepairAction, command: RepairCommand
    ) -> RepairReceipt:
        def done(receipt: RepairReceipt) -> tuple[str, dict[str, str | bool | None]]:
            record = str(receipt.record_id) if receipt.record_id else None
            return DONE[action], {
                "dead_letter_id": str(command.dead_letter_id),
                "record_id": record,
                "replayed": receipt.replayed,
            }

        return await reported_repair(
            repairing,
            telemetry=self.telemetry,
            action=action.value,
            actor=command.actor,
            dead_letter_id=command.dead_letter_id,
            refused=(
                EventRepairRefused,
                f"operator.event.{action.value}.refused",
                lambda error: f"already_{error.resolution}",
            ),
            done=done,
        )

    async def observe_backlog(self) -> Sequence[OrganizationBacklog]:
        """Replace the tenant events gauges' series with the bounded metrics rows (the top
        organizations and one ``other``), so the number of series stays bounded; an age reads
        0 when nothing is due."""
        rows = await self.gauge.metrics()
        for name in GAUGES:
            self.telemetry.forget(name)
        for row in rows:
            org = row.organization
            age = row.oldest_due_age.total_seconds() if row.oldest_due_age else 0.0
            self.telemetry.observe(
                "outbox_tenant_events", row.pending, organization=org, state="pending"
            )
            self.telemetry.observe(
                "outbox_tenant_events", row.leased, organization=org, state="leased"
            )
            self.telemetry.observe(
                "outbox_tenant_events_oldest_due_age_seconds", age, organization=org
            )
            self.telemetry.observe(
                "outbox_tenant_events_dead_letters", row.dead_letters, organization=org
            )
            self.telemetry.observe(
                "outbox_tenant_events_parked_aggregates", row.parked_aggregates, organization=org
            )
        return rows

    async def list_types(self) -> Sequence[EventTypeView]:
        """Every event type by code; raises PermissionDenied for a connection that is not the
        database operator's."""
        return await self.catalog.event_types()


def _check_window(where: EventFilter) -> None:
    if where.since is not None and where.until is not None and where.until <= where.since:
        raise InvalidField("until", "must be later than since")
