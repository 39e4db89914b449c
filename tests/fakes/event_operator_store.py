"""An in-memory EventOperatorStore and EventBacklogGauge, following 0020_events_operator.sql
rule for rule where the use cases depend on it: staff gating, keyset pages newest first, a
dead letter resolved once, idempotent replays per (actor, key) and the audit of each repair."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from uuid import UUID, uuid4

import attrs

from outbox.application.errors import InvalidRequest, PermissionDenied
from outbox.application.events.errors import DeadLetterNotFound, EventRepairRefused
from outbox.application.events.views import (
    OTHER,
    BulkEventAction,
    BulkOutcome,
    EventDeadLetter,
    EventDetail,
    EventFilter,
    EventState,
    EventSummary,
    OrganizationBacklog,
    ParkedAggregate,
    RepairAction,
    RepairReceipt,
    Resolution,
)
from outbox.application.staff import IdempotencyKeyReused, StaffActor, StaffRequired, StepUpRequired

TOP = 10  # organizations events.backlog_metrics names before "other"


@attrs.frozen(kw_only=True)
class RepairAudit:
    """One row of events.operator_audit."""

    action: RepairAction
    actor_id: UUID
    dead_letter_id: UUID
    new_record_id: UUID | None
    reason: str
    idempotency_key: str
    elevated: bool


@attrs.define
class InMemoryEventOperatorStore:
    """Dead letters, backlog rows and events put in place by a test; repairs change them."""

    staff: set[UUID] = attrs.field(factory=set)
    elevations: dict[str, UUID] = attrs.field(factory=dict)  # digest -> staff member
    operator_allowed: bool = True  # whether this "connection" is the database operator's
    backlog_rows: list[OrganizationBacklog] = attrs.field(factory=list)
    letters: list[EventDeadLetter] = attrs.field(factory=list)  # oldest first
    waiting: dict[UUID, int] = attrs.field(factory=dict)
    events: dict[UUID, EventDetail] = attrs.field(factory=dict)
    audit: list[RepairAudit] = attrs.field(factory=list)
    summaries: list[EventSummary] = attrs.field(factory=list)  # events a search lists
    cancelled: list[tuple[UUID, str]] = attrs.field(factory=list)  # (record, request key)
    now: datetime = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)

    def _gate(self, actor: StaffActor | None, *, repair: bool = False) -> None:
        if actor is None:
            if repair or not self.operator_allowed:
                raise StaffRequired("42501")
            return
        if actor.identity_id not in self.staff:
            raise StaffRequired("42501")
        if actor.elevation_digest is None:
            if not self.operator_allowed:
                raise PermissionDenied("42501")
            return
        if self.elevations.get(actor.elevation_digest) != actor.identity_id:
            raise StepUpRequired

    async def backlog(
        self, *, actor: StaffActor | None, limit: int
    ) -> Sequence[OrganizationBacklog]:
        self._gate(actor)
        ordered = sorted(
            self.backlog_rows,
            key=lambda r: (-(r.pending + r.leased), -r.dead_letters, r.organization),
        )
        return ordered[:limit]

    def _page(
        self, rows: list[EventDeadLetter], after: UUID | None, before: UUID | None, limit: int
    ) -> list[EventDeadLetter]:
        newest_first = sorted(rows, key=lambda r: (r.dead_lettered_at, r.id), reverse=True)
        ids = [r.id for r in self.letters]
        cursor = after or before
        if cursor is not None and cursor not in ids:
            raise InvalidRequest("cursor: no dead letter has this id")
        if cursor is None:
            return newest_first[:limit]
        at = next(r for r in self.letters if r.id == cursor)
        key = (at.dead_lettered_at, at.id)
        if after is not None:
            return [r for r in newest_first if (r.dead_lettered_at, r.id) < key][:limit]
        newer = [r for r in reversed(newest_first) if (r.dead_lettered_at, r.id) > key][:limit]
        return list(reversed(newer))

    async def dead_letters(
        self,
        *,
        actor: StaffActor | None,
        organization_id: UUID | None,
        unresolved_only: bool,
        after: UUID | None,
        before: UUID | None,
        limit: int,
    ) -> Sequence[EventDeadLetter]:
        self._gate(actor)
        rows = [
            r
            for r in self.letters
            if (organization_id is None or r.organization_id == organization_id)
            and (not unresolved_only or r.resolution is None)
        ]
        return self._page(rows, after, before, limit)

    async def parked(
        self,
        *,
        actor: StaffActor | None,
        organization_id: UUID | None,
        after: UUID | None,
        before: UUID | None,
        limit: int,
    ) -> Sequence[ParkedAggregate]:
        letters = await self.dead_letters(
            actor=actor,
            organization_id=organization_id,
            unresolved_only=True,
            after=after,
            before=before,
            limit=limit,
        )
        return [
            ParkedAggregate(
                id=d.id,
                organization_id=d.organization_id,
                aggregate_type=d.aggregate_type,
                aggregate_id=d.aggregate_id,
                event_id=d.event_id,
                event_type=d.event_type,
                reason=d.reason,
                parked_since=d.dead_lettered_at,
                waiting=self.waiting.get(d.id, 0),
            )
            for d in letters
        ]

    async def event(self, *, actor: StaffActor | None, event_id: UUID) -> EventDetail | None:
        self._gate(actor)
        return self.events.get(event_id)

    def _repair(  # noqa: PLR0917 - the SQL function's arguments, in its order
        self,
        actor: StaffActor,
        action: RepairAction,
        dead_letter_id: UUID,
        new_record_id: UUID | None,
        reason: str,
        key: str,
    ) -> RepairReceipt:
        self._gate(actor, repair=True)
        if not 1 <= len(reason) <= 500:
            raise InvalidRequest("p_reason: 1 to 500 characters")
        for row in self.audit:
            if row.actor_id == actor.identity_id and row.idempotency_key == key:
                if row.action is action and row.dead_letter_id == dead_letter_id:
                    return RepairReceipt(
                        action=action,
                        dead_letter_id=dead_letter_id,
                        record_id=row.new_record_id,
                        replayed=True,
                    )
                raise IdempotencyKeyReused
        index = next((i for i, d in enumerate(self.letters) if d.id == dead_letter_id), None)
        if index is None:
            raise DeadLetterNotFound(str(dead_letter_id))
        letter = self.letters[index]
        if letter.resolution is not None:
            raise EventRepairRefused(letter.resolution.value)
        self.letters[index] = attrs.evolve(
            letter,
            resolution=(
                Resolution.REPUBLISHED if action is RepairAction.REPUBLISH else Resolution.RELEASED
            ),
            resolved_at=self.now,
            resolved_by=str(actor.identity_id),
            republished_as=new_record_id,
        )
        self.audit.append(
            RepairAudit(
                action=action,
                actor_id=actor.identity_id,
                dead_letter_id=dead_letter_id,
                new_record_id=new_record_id,
                reason=reason,
                idempotency_key=key,
                elevated=actor.elevation_digest is not None,
            )
        )
        return RepairReceipt(action=action, dead_letter_id=dead_letter_id, record_id=new_record_id)

    async def republish(
        self,
        *,
        actor: StaffActor,
        dead_letter_id: UUID,
        new_record_id: UUID,
        reason: str,
        idempotency_key: str,
    ) -> RepairReceipt:
        return self._repair(
            actor, RepairAction.REPUBLISH, dead_letter_id, new_record_id, reason, idempotency_key
        )

    async def release(
        self, *, actor: StaffActor, dead_letter_id: UUID, reason: str, idempotency_key: str
    ) -> RepairReceipt:
        return self._repair(
            actor, RepairAction.RELEASE, dead_letter_id, None, reason, idempotency_key
        )

    async def search(
        self,
        *,
        actor: StaffActor | None,
        state: EventState | None,
        where: EventFilter,
        before: int | None,
        limit: int,
    ) -> Sequence[EventSummary]:
        self._gate(actor)
        rows = [
            e
            for e in sorted(self.summaries, key=lambda e: e.sequence, reverse=True)
            if where.matches(e)
            and (state is None or e.state is state)
            and (before is None or e.sequence < before)
        ]
        return rows[:limit]

    def _letter_matches(self, letter: EventDeadLetter, where: EventFilter) -> bool:
        """A dead letter's event, as a search row would show it (appended when it died)."""
        return where.matches(
            EventSummary(
                id=letter.event_id,
                sequence=0,
                organization_id=letter.organization_id,
                event_type=letter.event_type,
                contract_version=letter.contract_version,
                aggregate_type=letter.aggregate_type,
                aggregate_id=letter.aggregate_id,
                appended_at=letter.dead_lettered_at,
                record_id=letter.id,
                state=EventState.DEAD_LETTERED,
                attempts=letter.attempts,
            )
        )

    def _targets(self, action: BulkEventAction, where: EventFilter, as_of: datetime) -> list[UUID]:
        if action is BulkEventAction.CANCEL:
            return [
                e.record_id
                for e in sorted(self.summaries, key=lambda e: e.sequence)
                if e.state is EventState.PENDING and e.appended_at <= as_of and where.matches(e)
            ]
        return [
            d.id
            for d in self.letters
            if d.resolution is None
            and d.dead_lettered_at <= as_of
            and self._letter_matches(d, where)
        ]

    async def count_bulk(
        self,
        *,
        actor: StaffActor | None,
        action: BulkEventAction,
        where: EventFilter,
        as_of: datetime | None,
    ) -> tuple[int, datetime]:
        self._gate(actor)
        at = as_of or self.now
        return len(self._targets(action, where, at)), at

    async def bulk_repair(
        self,
        *,
        actor: StaffActor,
        action: BulkEventAction,
        where: EventFilter,
        as_of: datetime,
        reason: str,
        idempotency_key: str,
        limit: int,
    ) -> BulkOutcome:
        self._gate(actor, repair=True)
        if not 1 <= len(reason) <= 500:
            raise InvalidRequest("p_reason: 1 to 500 characters")
        prefix = f"{idempotency_key}:"
        replayed = sum(
            1
            for a in self.audit
            if a.actor_id == actor.identity_id
            and a.action.value == action.value
            and a.idempotency_key.startswith(prefix)
        ) + sum(1 for _, key in self.cancelled if key.startswith(prefix))
        targets = self._targets(action, where, as_of)
        for record_id in targets[:limit]:
            key = f"{prefix}{record_id}"
            if action is BulkEventAction.CANCEL:
                self.summaries = [
                    attrs.evolve(e, state=EventState.DEAD_LETTERED, resolution=Resolution.CANCELLED)
                    if e.record_id == record_id
                    else e
                    for e in self.summaries
                ]
                self.cancelled.append((record_id, key))
            else:
                repair = RepairAction(action.value)
                self._repair(actor, repair, record_id, uuid4(), reason, key)
        return BulkOutcome(
            action=action,
            changed=len(targets[:limit]),
            replayed=replayed,
            remaining=max(len(targets) - limit, 0),
        )


@attrs.define
class InMemoryEventBacklogGauge:
    """The bounded metrics rows of the store's backlog: the top ten, then OTHER summing the rest."""

    store: InMemoryEventOperatorStore

    async def metrics(self) -> Sequence[OrganizationBacklog]:
        ordered = sorted(
            self.store.backlog_rows,
            key=lambda r: (-(r.pending + r.leased), -r.dead_letters, r.organization),
        )
        top, rest = ordered[:TOP], ordered[TOP:]
        ages = [r.oldest_due_age for r in rest if r.oldest_due_age is not None]
        return [
            *top,
            OrganizationBacklog(
                organization=OTHER,
                pending=sum(r.pending for r in rest),
                leased=sum(r.leased for r in rest),
                oldest_due_age=max(ages) if ages else None,
                dead_letters=sum(r.dead_letters for r in rest),
                parked_aggregates=sum(r.parked_aggregates for r in rest),
            ),
        ]
