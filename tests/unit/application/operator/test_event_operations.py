"""The operator use cases over the tenant events outbox, on the in-memory store: reads,
keyset pages, republish and release (refusals, replays, audit, telemetry) and the bounded
per-organization gauges."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from uuid import UUID

import attrs
import pytest

from outbox.application.errors import InvalidField, InvalidRequest
from outbox.application.events.errors import DeadLetterNotFound, EventNotFound, EventRepairRefused
from outbox.application.events.operations import (
    GAUGES,
    EventBacklogQuery,
    EventDeadLetterQuery,
    EventOperations,
    EventQuery,
    ParkedQuery,
    ReleaseCommand,
    RepublishCommand,
)
from outbox.application.events.views import (
    OTHER,
    EventDeadLetter,
    EventTypeView,
    OrganizationBacklog,
    RepairAction,
    RepairReceipt,
    Resolution,
)
from outbox.application.staff import IdempotencyKeyReused, StaffActor, StaffRequired, StepUpRequired
from tests.fakes.event_operator_store import InMemoryEventBacklogGauge, InMemoryEventOperatorStore
from tests.fakes.ids import SequentialIds
from tests.fakes.telemetry import RecordingTelemetry

STAFF_ID = UUID("00000000-0000-4000-8000-0000000000f1")
ORG = UUID("00000000-0000-4000-8000-0000000000a1")
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
STAFF = StaffActor(identity_id=STAFF_ID)  # the database operator in a staff member's name


def _letter(n: int, *, organization: UUID = ORG) -> EventDeadLetter:
    return EventDeadLetter(
        id=UUID(int=n),
        event_id=UUID(int=1000 + n),
        organization_id=organization,
        event_type="sales.order_placed",
        contract_version=1,
        aggregate_type="order",
        aggregate_id=f"o-{n}",
        reason="REJECTED",
        attempts=5,
        dead_lettered_at=T0 + timedelta(minutes=n),
    )


@attrs.define
class World:
    store: InMemoryEventOperatorStore = attrs.field(factory=InMemoryEventOperatorStore)
    ids: SequentialIds = attrs.field(factory=SequentialIds)
    telemetry: RecordingTelemetry = attrs.field(factory=RecordingTelemetry)

    def __attrs_post_init__(self) -> None:
        self.store.staff.add(STAFF_ID)

    @property
    def ops(self) -> EventOperations:
        return EventOperations(
            store=self.store,
            gauge=InMemoryEventBacklogGauge(self.store),
            catalog=_NoCatalog(),
            ids=self.ids,
            telemetry=self.telemetry,
        )

    async def republish(self, command: RepublishCommand) -> RepairReceipt:
        return await self.ops.republish(command)

    async def release(self, command: ReleaseCommand) -> RepairReceipt:
        return await self.ops.release(command)


class _NoCatalog:
    async def event_types(self) -> Sequence[EventTypeView]:
        return ()


@pytest.fixture
def world() -> World:
    return World()


async def test_the_backlog_is_largest_first_and_bounded(world: World):
    world.store.backlog_rows = [
        OrganizationBacklog(organization=f"org-{n}", pending=n) for n in range(5)
    ]

    rows = await world.ops.show_backlog(EventBacklogQuery(limit=2))

    assert ["org-4", "org-3"] == [row.organization for row in rows]
    with pytest.raises(InvalidField, match="limit"):
        await world.ops.show_backlog(EventBacklogQuery(limit=0))


async def test_dead_letters_page_newest_first_both_ways(world: World):
    world.store.letters = [_letter(n) for n in range(1, 6)]
    listing = world.ops.list_dead_letters

    first = await listing(EventDeadLetterQuery(limit=2))
    second = await listing(EventDeadLetterQuery(after=first.older_cursor, limit=2))
    back = await listing(EventDeadLetterQuery(before=second.newer_cursor, limit=2))

    assert [5, 4] == [item.id.int for item in first.items]
    assert (True, False) == (first.has_older, first.has_newer)
    assert [3, 2] == [item.id.int for item in second.items]
    assert (True, True) == (second.has_older, second.has_newer)
    assert first.items == back.items
    with pytest.raises(InvalidField, match="before"):
        await listing(EventDeadLetterQuery(after=UUID(int=1), before=UUID(int=2)))
    with pytest.raises(InvalidRequest):
        await listing(EventDeadLetterQuery(after=UUID(int=99)))


async def test_parked_aggregates_are_the_unresolved_dead_letters(world: World):
    world.store.letters = [_letter(1), _letter(2)]
    world.store.waiting[UUID(int=2)] = 3
    await world.release(ReleaseCommand(actor=STAFF, dead_letter_id=UUID(int=1), reason="gone"))

    page = await world.ops.list_parked(ParkedQuery())

    assert [(UUID(int=2), 3)] == [(item.id, item.waiting) for item in page.items]


async def test_an_unknown_event_is_not_found(world: World):
    with pytest.raises(EventNotFound):
        await world.ops.show_event(EventQuery(event_id=UUID(int=7)))


async def test_a_republish_resolves_the_dead_letter_once_and_is_reported(world: World):
    world.store.letters = [_letter(1)]
    command = RepublishCommand(
        actor=STAFF, dead_letter_id=UUID(int=1), reason="  target fixed  ", idempotency_key="k"
    )

    receipt = await world.republish(command)
    replay = await world.republish(command)

    assert (RepairAction.REPUBLISH, False) == (receipt.action, receipt.replayed)
    assert UUID("00000000-0000-7000-8000-000000000001") == receipt.record_id
    assert (True, receipt.record_id) == (replay.replayed, replay.record_id)
    [letter] = world.store.letters
    assert (Resolution.REPUBLISHED, receipt.record_id) == (letter.resolution, letter.republished_as)
    [audit] = world.store.audit
    assert ("target fixed", "k") == (audit.reason, audit.idempotency_key)
    assert 2 == len(world.telemetry.named("operator.event.republished"))
    with pytest.raises(EventRepairRefused) as refused:
        await world.release(ReleaseCommand(actor=STAFF, dead_letter_id=UUID(int=1), reason="x"))
    assert "republished" == refused.value.resolution
    assert 1 == len(world.telemetry.named("operator.event.release.refused"))


async def test_a_key_reused_for_another_request_is_refused(world: World):
    world.store.letters = [_letter(1), _letter(2)]
    await world.release(
        ReleaseCommand(actor=STAFF, dead_letter_id=UUID(int=1), reason="a", idempotency_key="k")
    )

    with pytest.raises(IdempotencyKeyReused):
        await world.release(
            ReleaseCommand(actor=STAFF, dead_letter_id=UUID(int=2), reason="b", idempotency_key="k")
        )


@pytest.mark.parametrize("reason", ["", "   ", "two\nlines", "x" * 501])
async def test_a_repair_needs_a_one_line_reason(world: World, reason: str):
    world.store.letters = [_letter(1)]

    with pytest.raises(InvalidField, match="reason"):
        await world.release(ReleaseCommand(actor=STAFF, dead_letter_id=UUID(int=1), reason=reason))
    assert [] == world.store.audit


async def test_repairs_are_refused_to_strangers_and_stale_step_ups(world: World):
    world.store.letters = [_letter(1)]
    stranger = StaffActor(identity_id=UUID(int=5))
    stale = StaffActor(identity_id=STAFF_ID, elevation_digest="0" * 64)

    with pytest.raises(StaffRequired):
        await world.release(ReleaseCommand(actor=stranger, dead_letter_id=UUID(int=1), reason="x"))
    with pytest.raises(StepUpRequired):
        await world.release(ReleaseCommand(actor=stale, dead_letter_id=UUID(int=1), reason="x"))
    with pytest.raises(DeadLetterNotFound):
        await world.release(ReleaseCommand(actor=STAFF, dead_letter_id=UUID(int=9), reason="x"))
    assert [("security.staff_required", "warning")] == [
        (e.name, e.level) for e in world.telemetry.events
    ]


async def test_the_gauges_keep_ten_organizations_and_other_and_forget_the_rest(world: World):
    world.store.backlog_rows = [
        OrganizationBacklog(organization=f"org-{n:02}", pending=n, dead_letters=1)
        for n in range(1, 13)
    ]
    rows = await world.ops.observe_backlog()

    assert list(GAUGES) == world.telemetry.forgotten
    assert 11 == len(rows)
    assert OTHER == rows[-1].organization
    pending = {
        labels["organization"]: value
        for name, value, labels in world.telemetry.observations
        if name == "outbox_tenant_events" and labels["state"] == "pending"
    }
    assert 1 + 2 == pending[OTHER]
    assert 11 == len(pending)
