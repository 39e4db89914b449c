"""The events checker can fail: each bad case it exists for is caught (and a good run is not)."""

from __future__ import annotations

from uuid import UUID, uuid4

import attrs

from tests.reliability.event_checker import (
    AttemptRow,
    EventRow,
    EventSnapshot,
    EventVerdict,
    RecordRow,
    check_events,
)
from tests.reliability.event_ledger import ACCEPTED, Offer
from tests.reliability.event_producer import Aggregate, Appended
from tests.reliability.lease_audit import Transition

OWNER = "host:pid1:aaaaaaaa"
OWNERS = {"w1": OWNER}
ORG = uuid4()
AGGREGATE: Aggregate = (ORG, "order", "order-1")


@attrs.define
class World:
    """A hand-built end state: events, their records, attempts, publications, audit rows."""

    events: dict[UUID, EventRow] = attrs.field(factory=dict)
    records: dict[UUID, RecordRow] = attrs.field(factory=dict)
    publications: dict[UUID, list[tuple[int, float]]] = attrs.field(factory=dict)
    attempts: list[AttemptRow] = attrs.field(factory=list)
    dead_letters: dict[UUID, list[tuple[str | None, float | None]]] = attrs.field(factory=dict)
    transitions: list[Transition] = attrs.field(factory=list)
    appended: list[Appended] = attrs.field(factory=list)
    offers: list[Offer] = attrs.field(factory=list)
    tokens: dict[UUID, UUID] = attrs.field(factory=dict)  # record -> its lease token

    def event(self, sequence: int, aggregate: Aggregate = AGGREGATE) -> tuple[UUID, UUID]:
        """An appended event and its pending record."""
        event_id, record_id = uuid4(), uuid4()
        self.events[event_id] = EventRow(aggregate=aggregate, append_sequence=sequence)
        self.records[record_id] = RecordRow(event_id=event_id, state="pending", reason=None)
        self.appended.append(Appended(id=event_id, aggregate=aggregate, key="k", payload={}))
        return event_id, record_id

    def claim(self, record_id: UUID, at: float, *, expires: float | None = None) -> UUID:
        """A lease granted to OWNER at ``at``."""
        token = uuid4()
        self.tokens[record_id] = token
        self.transitions.append(
            _change(
                record_id, at, "claim", "pending", "leased", None, token, None, expires or at + 2
            )
        )
        return token

    def publish(self, record_id: UUID, at: float, sequence: int) -> None:
        """Record ``record_id`` published at ``at`` under its lease, publication ``sequence``."""
        token = self.tokens[record_id]
        expires = next(t.new_lease_expires_at for t in self.transitions if t.new_token == token)
        self.transitions.append(
            _change(record_id, at, "record", "leased", "published", token, None, expires, None)
        )
        self.attempts.append(
            AttemptRow(
                record_id=record_id,
                attempt=1,
                outcome="published",
                recorded_at=at,
                lease_token=token,
            )
        )
        event_id = self.records[record_id].event_id
        self.records[record_id] = attrs.evolve(self.records[record_id], state="published")
        self.publications[event_id] = [(sequence, at)]

    def dead_letter(self, record_id: UUID, at: float, released_at: float | None = None) -> None:
        """Record ``record_id`` dead-lettered at ``at``, released at ``released_at``."""
        token = self.tokens[record_id]
        self.transitions.append(
            _change(record_id, at, "record", "leased", "dead_lettered", token, None, at + 1, None)
        )
        self.attempts.append(
            AttemptRow(
                record_id=record_id,
                attempt=1,
                outcome="dead_letter",
                recorded_at=at,
                lease_token=token,
            )
        )
        event_id = self.records[record_id].event_id
        self.records[record_id] = RecordRow(
            event_id=event_id, state="dead_lettered", reason="REJECTED"
        )
        resolution = "released" if released_at is not None else None
        self.dead_letters[event_id] = [(resolution, released_at)]

    def offer(
        self, record_id: UUID, at: float, *, token: UUID | None = None, worker: str = "w1"
    ) -> None:
        """The target received ``record_id``'s event at ``at`` and accepted it."""
        event_id = self.records[record_id].event_id
        row = self.events[event_id]
        self.offers.append(
            Offer(
                event_id=event_id,
                record_id=record_id,
                lease_token=token or self.tokens[record_id],
                organization_id=row.aggregate[0],
                aggregate=row.aggregate,
                append_sequence=row.append_sequence,
                attempt=1,
                worker=worker,
                received_at=at,
                answer=ACCEPTED,
            )
        )

    def check(self, untargeted: frozenset[str] = frozenset()) -> EventVerdict:
        for n, change in enumerate(self.transitions, start=1):
            self.transitions[n - 1] = attrs.evolve(change, id=n)
        snapshot = EventSnapshot(
            events=self.events,
            records=self.records,
            publications=self.publications,
            attempts=self.attempts,
            dead_letters=self.dead_letters,
            transitions=self.transitions,
        )
        return check_events(self.appended, snapshot, self.offers, OWNERS, untargeted)


def _change(  # noqa: PLR0917 - one audit row, column by column
    record_id: UUID,
    at: float,
    caller: str,
    old_state: str,
    new_state: str,
    old_token: UUID | None,
    new_token: UUID | None,
    old_expires: float | None,
    new_expires: float | None,
) -> Transition:
    return Transition(
        id=0,
        message_id=record_id,
        at=at,
        caller=caller,
        old_state=old_state,
        new_state=new_state,
        old_owner=OWNER if old_token else None,
        new_owner=OWNER if new_token else None,
        old_token=old_token,
        new_token=new_token,
        old_lease_expires_at=old_expires,
        new_lease_expires_at=new_expires,
        reason=None,
    )


def _published_in_order(world: World) -> tuple[UUID, UUID]:
    _, first = world.event(1)
    _, second = world.event(2)
    world.claim(first, 10.0)
    world.offer(first, 10.1)
    world.publish(first, 10.2, sequence=1)
    world.claim(second, 10.3)
    world.offer(second, 10.4)
    world.publish(second, 10.5, sequence=2)
    return first, second


def test_a_clean_run_has_no_finding() -> None:
    world = World()
    _published_in_order(world)

    verdict = world.check()

    assert (2, 2, 0, 2, 0) == (
        verdict.appended,
        verdict.published,
        verdict.lost,
        verdict.offers,
        verdict.re_offered,
    )
    assert [] == verdict.problems


def test_an_event_missing_or_never_published_is_lost() -> None:
    world = World()
    world.event(1)
    world.appended.append(Appended(id=uuid4(), aggregate=AGGREGATE, key="gone", payload={}))

    verdict = world.check()

    assert 2 == verdict.lost


def test_publication_out_of_append_order_is_caught() -> None:
    world = World()
    _, first = world.event(1)
    _, second = world.event(2)
    world.claim(first, 10.0)
    world.claim(second, 10.0)
    world.publish(second, 10.1, sequence=1)
    world.publish(first, 10.2, sequence=2)
    world.offers.clear()

    verdict = world.check()

    assert verdict.order_violations >= 1


def test_publication_past_an_unreleased_dead_letter_is_caught_and_a_released_one_is_not() -> None:
    verdicts = []
    for released_at in (None, 10.5):
        world = World()
        _, dead = world.event(1)
        _, later = world.event(2)
        world.claim(dead, 10.0)
        world.dead_letter(dead, 10.1, released_at=released_at)
        world.claim(later, 11.0)
        world.publish(later, 11.1, sequence=1)
        verdicts.append(world.check())
    unreleased, released = verdicts

    assert 1 == unreleased.order_violations
    assert (0, 1, 1) == (
        released.order_violations,
        released.published,
        sum(released.dead_lettered.values()),
    )


def test_an_event_behind_an_unresolved_dead_letter_counts_as_parked() -> None:
    world = World()
    _, dead = world.event(1)
    world.event(2)
    world.claim(dead, 10.0)
    world.dead_letter(dead, 10.1)

    verdict = world.check()

    assert (1, 1, 0) == (sum(verdict.dead_lettered.values()), verdict.parked, verdict.lost)


def test_an_attempt_under_a_stale_or_foreign_token_is_a_fence_violation() -> None:
    world = World()
    _, record = world.event(1)
    world.claim(record, 10.0, expires=10.5)
    world.publish(record, 11.0, sequence=1)  # after the lease ran out
    _, other = world.event(1, aggregate=(ORG, "order", "order-2"))
    world.claim(other, 10.0)
    world.publish(other, 10.1, sequence=2)
    world.attempts[-1] = attrs.evolve(world.attempts[-1], lease_token=uuid4())

    verdict = world.check()

    assert 2 == verdict.stale_token_attempts
    assert verdict.fence_violations >= 2


def test_offers_twice_unleased_late_and_out_of_order_are_counted() -> None:
    world = World()
    first, second = _published_in_order(world)
    world.offer(first, 10.15)  # offered again under the same lease: a re-offer
    world.offer(second, 10.45, token=uuid4())  # a token nobody granted
    world.offer(second, 13.0)  # after its lease ended
    _, never = world.event(1, aggregate=(ORG, "order", "order-9"))
    world.claim(never, 10.0)
    world.publish(never, 10.1, sequence=3)  # published, never offered

    verdict = world.check()

    assert (2, 3, 1, 1) == (
        verdict.re_offered,
        verdict.re_offers,
        verdict.unleased_offers,
        verdict.late_offers,
    )
    assert 1 == verdict.target_order_violations  # first's second offer came after second's
    assert 1 == verdict.published_unaccepted


def test_what_a_worker_without_target_published_need_not_have_been_offered() -> None:
    world = World()
    _published_in_order(world)
    _, plain = world.event(1, aggregate=(ORG, "order", "order-2"))
    world.claim(plain, 10.0)
    world.publish(plain, 10.1, sequence=3)

    with_target, without = world.check(), world.check(untargeted=frozenset({OWNER}))

    assert (1, 0) == (with_target.published_unaccepted, with_target.published_untargeted)
    assert (0, 3) == (without.published_unaccepted, without.published_untargeted)
