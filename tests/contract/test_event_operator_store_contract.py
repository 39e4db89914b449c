"""EventOperatorStore contract: staff gating, keyset pages, the parked list, republish and
release (resolved once, replays, reused keys, unknown dead letters) and the audit behave
alike in the in-memory fake and in PostgreSQL (0020_events_operator.sql)."""

from __future__ import annotations

import hashlib
import secrets
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol
from uuid import UUID

import attrs
import pytest

from outbox.adapters.postgres.event_operator_store import PostgresEventOperatorStore
from outbox.adapters.postgres.pool import open_pool
from outbox.application.errors import InvalidRequest, PermissionDenied
from outbox.application.events.errors import DeadLetterNotFound, EventRepairRefused
from outbox.application.events.operator_ports import EventOperatorStore
from outbox.application.events.views import (
    BulkEventAction,
    EventDeadLetter,
    EventFilter,
    EventState,
    EventSummary,
    RepairAction,
    Resolution,
)
from outbox.application.staff import IdempotencyKeyReused, StaffActor, StaffRequired, StepUpRequired
from tests.events_rows import EventRows
from tests.fakes.event_operator_store import InMemoryEventOperatorStore

ORG = UUID("00000000-0000-4000-8000-0000000000d1")


class Harness(Protocol):
    """Both stores (the API's, the database operator's) and what a test puts in place."""

    @property
    def api(self) -> EventOperatorStore: ...
    @property
    def admin(self) -> EventOperatorStore: ...

    async def staff(self) -> StaffActor: ...
    async def elevate(self, actor: StaffActor) -> StaffActor: ...
    async def dead_letter(self, aggregate_id: str) -> UUID: ...
    async def pending(self, aggregate_id: str) -> UUID: ...
    async def audit(self) -> list[tuple[str, UUID, str, str, bool]]: ...


@attrs.define
class MemoryHarness:
    admin: InMemoryEventOperatorStore = attrs.field(factory=InMemoryEventOperatorStore)
    api: InMemoryEventOperatorStore = attrs.field(init=False)
    count: int = 0

    def __attrs_post_init__(self) -> None:
        # The same rows, seen through a connection that is not the database operator's.
        self.api = attrs.evolve(self.admin, operator_allowed=False)

    async def staff(self) -> StaffActor:
        identity_id = uuid.uuid4()
        self.admin.staff.add(identity_id)
        return StaffActor(identity_id=identity_id)

    async def elevate(self, actor: StaffActor) -> StaffActor:
        digest = hashlib.sha256(secrets.token_bytes(16)).hexdigest()
        self.admin.elevations[digest] = actor.identity_id
        return attrs.evolve(actor, elevation_digest=digest)

    async def dead_letter(self, aggregate_id: str) -> UUID:
        self.count += 1
        letter = EventDeadLetter(
            id=uuid.uuid4(),
            event_id=uuid.uuid4(),
            organization_id=ORG,
            event_type="demo.thing_happened",
            contract_version=1,
            aggregate_type="thing",
            aggregate_id=aggregate_id,
            reason="REJECTED",
            attempts=1,
            dead_lettered_at=self.admin.now + timedelta(seconds=self.count),
        )
        self.admin.letters.append(letter)
        self._summary(letter.event_id, letter.id, aggregate_id, EventState.DEAD_LETTERED)
        return letter.id

    async def pending(self, aggregate_id: str) -> UUID:
        self.count += 1
        event_id = uuid.uuid4()
        self._summary(event_id, uuid.uuid4(), aggregate_id, EventState.PENDING)
        return event_id

    def _summary(
        self, event_id: UUID, record_id: UUID, aggregate_id: str, state: EventState
    ) -> None:
        self.admin.summaries.append(
            EventSummary(
                id=event_id,
                sequence=self.count,
                organization_id=ORG,
                event_type="demo.thing_happened",
                contract_version=1,
                aggregate_type="thing",
                aggregate_id=aggregate_id,
                appended_at=self.admin.now + timedelta(seconds=self.count),
                record_id=record_id,
                state=state,
                attempts=0,
            )
        )

    async def audit(self) -> list[tuple[str, UUID, str, str, bool]]:
        return [
            (a.action.value, a.dead_letter_id, a.reason, a.idempotency_key, a.elevated)
            for a in self.admin.audit
        ]


@attrs.define
class PostgresHarness:
    rows: EventRows
    api: PostgresEventOperatorStore
    admin: PostgresEventOperatorStore

    async def staff(self) -> StaffActor:
        identity_id = await self.rows.add_staff(f"staff-{uuid.uuid4().hex[:8]}@example.com")
        return StaffActor(identity_id=identity_id)

    async def elevate(self, actor: StaffActor) -> StaffActor:
        session, digest = uuid.uuid4(), hashlib.sha256(secrets.token_bytes(16)).hexdigest()
        await self.rows.rows(
            "INSERT INTO identity.sessions (id, identity_id, token_digest, created_at,"
            " expires_at, staff) VALUES (%s, %s, %s, now(), now() + interval '1 day', true)",
            session,
            actor.identity_id,
            hashlib.sha256(secrets.token_bytes(16)).hexdigest(),
        )
        await self.rows.rows(
            "INSERT INTO identity.elevations (id, session_id, identity_id, token_digest,"
            " created_at, expires_at) VALUES (%s, %s, %s, %s, now(), now() + interval '5 min')",
            uuid.uuid4(),
            session,
            actor.identity_id,
            digest,
        )
        return attrs.evolve(actor, elevation_digest=digest)

    async def dead_letter(self, aggregate_id: str) -> UUID:
        event = await self.rows.append(ORG, aggregate_id)
        await self.rows.dead_letter(event)
        return await self.rows.dead_record(event)

    async def pending(self, aggregate_id: str) -> UUID:
        return await self.rows.append(ORG, aggregate_id)

    async def audit(self) -> list[tuple[str, UUID, str, str, bool]]:
        found = await self.rows.rows(
            "SELECT action, dead_letter_id, reason, idempotency_key, elevation_id IS NOT NULL"
            " FROM events.operator_audit ORDER BY id"
        )
        return [tuple(row) for row in found]


@pytest.fixture(params=["memory", pytest.param("postgres", marks=pytest.mark.integration)])
async def harness(request: pytest.FixtureRequest, database_url: str) -> AsyncIterator[Harness]:
    """(The memory run gets a database it does not use: an async fixture cannot ask for the
    database fixtures only when it needs them.)"""
    if request.param == "memory":
        yield MemoryHarness()
        return
    rows = EventRows(database_url)
    await rows.setup()
    api_pool = await open_pool(database_url, min_size=1, max_size=2, role="staff_service")
    admin_pool = await open_pool(database_url, min_size=1, max_size=2)
    try:
        yield PostgresHarness(
            rows, PostgresEventOperatorStore(api_pool), PostgresEventOperatorStore(admin_pool)
        )
    finally:
        await api_pool.close()
        await admin_pool.close()


async def _release(store: EventOperatorStore, actor: StaffActor, dead: UUID, key: str) -> Any:
    return await store.release(actor=actor, dead_letter_id=dead, reason="why", idempotency_key=key)


async def test_dead_letters_page_newest_first(harness: Harness) -> None:
    dead = [await harness.dead_letter(f"p-{n}") for n in range(3)]

    first = await harness.admin.dead_letters(
        actor=None, organization_id=None, unresolved_only=False, after=None, before=None, limit=2
    )
    older = await harness.admin.dead_letters(
        actor=None,
        organization_id=ORG,
        unresolved_only=False,
        after=first[-1].id,
        before=None,
        limit=2,
    )
    newer = await harness.admin.dead_letters(
        actor=None,
        organization_id=None,
        unresolved_only=False,
        after=None,
        before=dead[0],
        limit=1,
    )

    assert [dead[2], dead[1]] == [d.id for d in first]
    assert [dead[0]] == [d.id for d in older]
    assert [dead[1]] == [d.id for d in newer]
    with pytest.raises(InvalidRequest):
        await harness.admin.dead_letters(
            actor=None,
            organization_id=None,
            unresolved_only=False,
            after=uuid.uuid4(),
            before=None,
            limit=2,
        )


async def test_a_release_resolves_once_replays_and_leaves_the_parked_list(harness: Harness) -> None:
    actor = await harness.staff()
    dead = await harness.dead_letter("r-1")

    first = await _release(harness.admin, actor, dead, "k-1")
    replay = await _release(harness.admin, actor, dead, "k-1")
    with pytest.raises(EventRepairRefused) as refused:
        await harness.admin.republish(
            actor=actor,
            dead_letter_id=dead,
            new_record_id=uuid.uuid4(),
            reason="no",
            idempotency_key="k-2",
        )
    with pytest.raises(IdempotencyKeyReused):
        await _release(harness.admin, actor, await harness.dead_letter("r-2"), "k-1")
    with pytest.raises(DeadLetterNotFound):
        await _release(harness.admin, actor, uuid.uuid4(), "k-3")

    assert (RepairAction.RELEASE, None, False) == (first.action, first.record_id, first.replayed)
    assert replay.replayed
    assert "released" == refused.value.resolution
    parked = await harness.admin.parked(
        actor=None, organization_id=None, after=None, before=None, limit=10
    )
    assert ["r-2"] == [p.aggregate_id for p in parked]
    letters = await harness.admin.dead_letters(
        actor=None,
        organization_id=None,
        unresolved_only=False,
        after=None,
        before=None,
        limit=10,
    )
    [letter] = [d for d in letters if d.id == dead]
    assert (Resolution.RELEASED, str(actor.identity_id)) == (letter.resolution, letter.resolved_by)
    assert [("release", dead, "why", "k-1", False)] == await harness.audit()


async def test_a_republish_names_its_new_record(harness: Harness) -> None:
    actor = await harness.elevate(await harness.staff())
    dead = await harness.dead_letter("x-1")
    new_record = uuid.uuid4()

    receipt = await harness.api.republish(
        actor=actor,
        dead_letter_id=dead,
        new_record_id=new_record,
        reason="fixed",
        idempotency_key="k-1",
    )

    assert (RepairAction.REPUBLISH, new_record) == (receipt.action, receipt.record_id)
    [letter] = await harness.api.dead_letters(
        actor=actor,
        organization_id=None,
        unresolved_only=False,
        after=None,
        before=None,
        limit=10,
    )
    assert (Resolution.REPUBLISHED, new_record) == (letter.resolution, letter.republished_as)
    assert [("republish", dead, "fixed", "k-1", True)] == await harness.audit()


async def test_the_api_needs_a_staff_member_with_a_fresh_step_up(harness: Harness) -> None:
    actor = await harness.staff()
    stranger = StaffActor(identity_id=uuid.uuid4(), elevation_digest="0" * 64)
    stale = attrs.evolve(actor, elevation_digest="0" * 64)

    with pytest.raises(StaffRequired):
        await harness.api.backlog(actor=stranger, limit=10)
    with pytest.raises(StepUpRequired):
        await harness.api.backlog(actor=stale, limit=10)
    with pytest.raises(PermissionDenied):
        await harness.api.backlog(actor=None, limit=10)
    assert [] == list(await harness.api.backlog(actor=await harness.elevate(actor), limit=10))


async def test_a_search_filters_by_state_and_aggregate_newest_first_in_pages(
    harness: Harness,
) -> None:
    dead = await harness.dead_letter("s-1")
    older = await harness.pending("s-1")
    newer = await harness.pending("s-1")
    await harness.pending("s-2")
    where = EventFilter(aggregate_id="s-1", organization_id=ORG)

    pending = await harness.admin.search(
        actor=None, state=EventState.PENDING, where=where, before=None, limit=10
    )
    first = await harness.admin.search(actor=None, state=None, where=where, before=None, limit=2)
    rest = await harness.admin.search(
        actor=None, state=None, where=where, before=first[-1].sequence, limit=2
    )

    assert [newer, older] == [e.id for e in pending]
    assert [newer, older] == [e.id for e in first]
    assert [(dead, EventState.DEAD_LETTERED)] == [(e.record_id, e.state) for e in rest]
    assert [] == list(
        await harness.admin.search(
            actor=None,
            state=None,
            where=EventFilter(event_type="demo.no_such_type"),
            before=None,
            limit=10,
        )
    )


async def test_a_bulk_release_counts_and_changes_only_unresolved_dead_letters_once(
    harness: Harness,
) -> None:
    actor = await harness.elevate(await harness.staff())
    resolved = await harness.dead_letter("b-0")
    await _release(harness.api, actor, resolved, "single")
    dead = [await harness.dead_letter(f"b-{n}") for n in (1, 2)]
    await harness.pending("b-3")
    now = datetime.now(UTC) + timedelta(days=1)
    everything = EventFilter(organization_id=ORG)

    count, _ = await harness.api.count_bulk(
        actor=actor, action=BulkEventAction.RELEASE, where=everything, as_of=now
    )
    before, _ = await harness.api.count_bulk(
        actor=actor,
        action=BulkEventAction.RELEASE,
        where=everything,
        as_of=datetime(2000, 1, 1, tzinfo=UTC),
    )
    first = await harness.api.bulk_repair(
        actor=actor,
        action=BulkEventAction.RELEASE,
        where=everything,
        as_of=now,
        reason="broker fixed",
        idempotency_key="form-1",
        limit=10,
    )
    again = await harness.api.bulk_repair(
        actor=actor,
        action=BulkEventAction.RELEASE,
        where=everything,
        as_of=now,
        reason="broker fixed",
        idempotency_key="form-1",
        limit=10,
    )

    assert (2, 0) == (count, before)
    assert (2, 0, 0) == (first.changed, first.replayed, first.remaining)
    assert (0, 2, 0) == (again.changed, again.replayed, again.remaining)
    audit = await harness.audit()
    assert sorted(dead) == sorted(row[1] for row in audit[1:])
    assert {("release", "broker fixed", True)} == {(a, r, e) for a, _, r, _, e in audit[1:]}


async def test_a_bulk_cancel_withdraws_pending_events_in_pages(harness: Harness) -> None:
    actor = await harness.elevate(await harness.staff())
    events = [await harness.pending(f"c-{n}") for n in range(3)]
    await harness.dead_letter("c-9")
    now = datetime.now(UTC) + timedelta(days=1)
    where = EventFilter(organization_id=ORG)

    count, _ = await harness.api.count_bulk(
        actor=actor, action=BulkEventAction.CANCEL, where=where, as_of=now
    )
    first = await harness.api.bulk_repair(
        actor=actor,
        action=BulkEventAction.CANCEL,
        where=where,
        as_of=now,
        reason="duplicate import",
        idempotency_key="cancel-1",
        limit=2,
    )
    rest = await harness.api.bulk_repair(
        actor=actor,
        action=BulkEventAction.CANCEL,
        where=where,
        as_of=now,
        reason="duplicate import",
        idempotency_key="cancel-2",
        limit=2,
    )

    assert 3 == count
    assert (2, 1) == (first.changed, first.remaining)
    assert (1, 0) == (rest.changed, rest.remaining)
    assert [] == list(
        await harness.api.search(
            actor=actor, state=EventState.PENDING, where=where, before=None, limit=10
        )
    )
    found = await harness.api.search(
        actor=actor, state=EventState.DEAD_LETTERED, where=where, before=None, limit=10
    )
    cancelled = {e.id for e in found if e.resolution is Resolution.CANCELLED}
    assert set(events) == cancelled
