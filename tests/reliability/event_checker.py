"""Classifies every appended tenant event from the database afterwards, and audits
order, fences and the offers the recording target saw.

Each acknowledged event is exactly one of: *published* (one publication row, its record
published under a recorded ``published`` attempt), *dead-lettered* (its record dead, with a
recorded ``dead_letter`` attempt and a dead letter row), *parked* (unpublished behind an
unresolved dead letter of its aggregate: allowed only where the scenario dead-letters) or
*lost* (anything else).

Order: within each (organization, aggregate) the publication sequence follows the append
sequence, and an event is published only once every earlier event of its aggregate was
published, or dead-lettered and released before it.

Fences: every row of ``events.publication_attempts`` must match a change the audit trigger
saw, made by ``record_publication_attempt`` under the very lease token the row names while
that lease was live; every such change left a row; no lease token was granted twice.

Offers (when a recording target is used): an event *re-offered* reached the target
accepted more than once (a worker died between the offer and its record); an offer is
*unleased* when its worker never held a lease on the record, *late* when it arrived after
that lease ended; per aggregate, accepted offers arrive in append order.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any
from uuid import UUID

import attrs
import psycopg

from tests.reliability.event_ledger import ACCEPTED, Offer
from tests.reliability.event_producer import Aggregate, Appended
from tests.reliability.lease_audit import EVENT_RECORDS, Transition, transitions

EVENTS = """
SELECT id, organization_id, aggregate_type, aggregate_id, append_sequence
FROM events.domain_events
"""
RECORDS = """
SELECT id, domain_event_id, state, dead_letter_reason FROM events.outbox_records
"""
PUBLICATIONS = """
SELECT domain_event_id, publication_sequence, published_at FROM events.domain_event_publications
"""
ATTEMPTS = """
SELECT outbox_record_id, attempt, outcome, recorded_at, lease_token
FROM events.publication_attempts ORDER BY id
"""
DEAD_LETTERS = """
SELECT domain_event_id, resolution, resolved_at FROM events.dead_letters
"""


@attrs.frozen(kw_only=True)
class EventRow:
    """One domain event: its aggregate and append order."""

    aggregate: Aggregate
    append_sequence: int


@attrs.frozen(kw_only=True)
class RecordRow:
    """One outbox record of an event."""

    event_id: UUID
    state: str
    reason: str | None


@attrs.frozen(kw_only=True)
class AttemptRow:
    """One row of events.publication_attempts."""

    record_id: UUID
    attempt: int
    outcome: str
    recorded_at: float
    lease_token: UUID


@attrs.frozen(kw_only=True)
class EventSnapshot:
    """What the database says at the end of an events scenario."""

    events: Mapping[UUID, EventRow]
    records: Mapping[UUID, RecordRow]
    publications: Mapping[UUID, list[tuple[int, float]]]  # event -> (sequence, published at)
    attempts: Sequence[AttemptRow]
    dead_letters: Mapping[UUID, list[tuple[str | None, float | None]]]  # event -> resolutions
    transitions: Sequence[Transition]

    @classmethod
    def read(cls, url: str) -> EventSnapshot:
        """Read the events schema and the audit log (superuser, direct)."""
        with psycopg.connect(url, autocommit=True) as conn:
            events = {
                row[0]: EventRow(aggregate=(row[1], row[2], row[3]), append_sequence=row[4])
                for row in conn.execute(EVENTS).fetchall()
            }
            records = {
                row[0]: RecordRow(event_id=row[1], state=row[2], reason=row[3])
                for row in conn.execute(RECORDS).fetchall()
            }
            publications: dict[UUID, list[tuple[int, float]]] = defaultdict(list)
            for event_id, sequence, at in conn.execute(PUBLICATIONS).fetchall():
                publications[event_id].append((sequence, at.timestamp()))
            attempts = [
                AttemptRow(
                    record_id=row[0],
                    attempt=row[1],
                    outcome=row[2],
                    recorded_at=row[3].timestamp(),
                    lease_token=row[4],
                )
                for row in conn.execute(ATTEMPTS).fetchall()
            ]
            dead: dict[UUID, list[tuple[str | None, float | None]]] = defaultdict(list)
            for event_id, resolution, resolved_at in conn.execute(DEAD_LETTERS).fetchall():
                dead[event_id].append((resolution, resolved_at and resolved_at.timestamp()))
        return cls(
            events=events,
            records=records,
            publications=dict(publications),
            attempts=attempts,
            dead_letters=dict(dead),
            transitions=transitions(url, EVENT_RECORDS),
        )


@attrs.define
class EventVerdict:
    """The counts of one events scenario, and the ids behind every bad count."""

    appended: int = 0
    published: int = 0
    dead_lettered: Counter[str] = attrs.field(factory=Counter)
    parked: int = 0
    lost: int = 0
    double_publications: int = 0
    order_violations: int = 0
    fence_violations: int = 0
    stale_token_attempts: int = 0
    offers: int = 0
    re_offered: int = 0  # events the target accepted more than once
    re_offers: int = 0  # accepted offers beyond each event's first
    unleased_offers: int = 0
    late_offers: int = 0
    target_order_violations: int = 0
    published_unaccepted: int = 0  # published although the target never accepted it
    published_untargeted: int = 0  # published by a worker with no target (never offered)
    problems: list[str] = attrs.field(factory=list)

    def counts(self) -> dict[str, Any]:
        """The counts, for the report."""
        return {
            "appended": self.appended,
            "published": self.published,
            "dead_lettered": dict(sorted(self.dead_lettered.items())),
            "parked": self.parked,
            "lost": self.lost,
            "double_publications": self.double_publications,
            "order_violations": self.order_violations,
            "fence_violations": self.fence_violations,
            "stale_token_attempts": self.stale_token_attempts,
            "offers": self.offers,
            "re_offered": self.re_offered,
            "re_offers": self.re_offers,
            "unleased_offers": self.unleased_offers,
            "late_offers": self.late_offers,
            "target_order_violations": self.target_order_violations,
            "published_unaccepted": self.published_unaccepted,
            "published_untargeted": self.published_untargeted,
        }

    def problem(self, text: str) -> None:
        """Note one bad finding (the first few are shown by a failing assert)."""
        self.problems.append(text)


def check_events(
    appended: Iterable[Appended],
    snapshot: EventSnapshot,
    offers: Sequence[Offer] = (),
    owners: Mapping[str, str] | None = None,
    untargeted: Collection[str] = (),
) -> EventVerdict:
    """Classify ``appended`` and audit order, fences and offers; see the module docstring.

    ``untargeted`` names the lease owners of workers that publish to no target (plain
    ``outboxctl worker``): what they published was never offered, and need not have been.
    """
    verdict = EventVerdict()
    outcomes: dict[UUID, set[str]] = defaultdict(set)
    for row in snapshot.attempts:
        outcomes[row.record_id].add(row.outcome)
    record_ids: dict[UUID, list[UUID]] = defaultdict(list)
    for record_id, record in snapshot.records.items():
        record_ids[record.event_id].append(record_id)
    for event in appended:
        assert event.id is not None
        verdict.appended += 1
        _classify(event.id, snapshot, record_ids[event.id], outcomes, verdict)
    _audit_order(snapshot, verdict)
    _audit_fences(snapshot, verdict)
    if offers:
        _audit_offers(offers, snapshot, owners or {}, frozenset(untargeted), verdict)
    return verdict


def _classify(
    event_id: UUID,
    snapshot: EventSnapshot,
    record_ids: Sequence[UUID],
    outcomes: Mapping[UUID, set[str]],
    verdict: EventVerdict,
) -> None:
    row = snapshot.events.get(event_id)
    publications = snapshot.publications.get(event_id, [])
    if len(publications) > 1:
        verdict.double_publications += 1
        verdict.problem(f"published twice {event_id}")
    if row is None:
        verdict.lost += 1
        verdict.problem(f"lost {event_id}: not in the database")
        return
    states = Counter(snapshot.records[rid].state for rid in record_ids)
    published = [rid for rid in record_ids if snapshot.records[rid].state == "published"]
    dead = [rid for rid in record_ids if snapshot.records[rid].state == "dead_lettered"]
    if publications:
        if len(published) == 1 and "published" in outcomes.get(published[0], set()):
            verdict.published += 1
        else:
            verdict.lost += 1
            verdict.problem(f"lost {event_id}: a publication row but records {dict(states)}")
        return
    if published:
        verdict.lost += 1
        verdict.problem(f"lost {event_id}: a published record without a publication row")
        return
    if dead and not states["pending"] + states["leased"]:
        recorded = all("dead_letter" in outcomes.get(rid, set()) for rid in dead)
        if recorded and event_id in snapshot.dead_letters:
            verdict.dead_lettered[str(snapshot.records[dead[-1]].reason)] += 1
        else:
            verdict.lost += 1
            verdict.problem(f"lost {event_id}: dead without a recorded attempt or dead letter")
        return
    if _parked(row, snapshot):
        verdict.parked += 1
        return
    verdict.lost += 1
    verdict.problem(f"lost {event_id}: still {dict(states)}")


def _parked(row: EventRow, snapshot: EventSnapshot) -> bool:
    """Whether an unresolved dead letter of an earlier event of the aggregate holds ``row``."""
    for event_id, resolutions in snapshot.dead_letters.items():
        other = snapshot.events.get(event_id)
        if (
            other is not None
            and other.aggregate == row.aggregate
            and other.append_sequence < row.append_sequence
            and any(resolution is None for resolution, _ in resolutions)
        ):
            return True
    return False


def _audit_order(snapshot: EventSnapshot, verdict: EventVerdict) -> None:
    by_aggregate: dict[Aggregate, list[tuple[int, UUID]]] = defaultdict(list)
    for event_id, row in snapshot.events.items():
        by_aggregate[row.aggregate].append((row.append_sequence, event_id))
    for aggregate, events in by_aggregate.items():
        events.sort()
        last_sequence = 0
        earlier: list[UUID] = []
        for _, event_id in events:
            publications = snapshot.publications.get(event_id)
            if publications:
                sequence, published_at = publications[0]
                if sequence < last_sequence:
                    verdict.order_violations += 1
                    verdict.problem(f"order {aggregate}: {event_id} published before an earlier")
                last_sequence = max(last_sequence, sequence)
                for before in earlier:
                    if not _cleared(before, published_at, snapshot):
                        verdict.order_violations += 1
                        verdict.problem(
                            f"order {aggregate}: {event_id} published past unpublished {before}"
                        )
            earlier.append(event_id)


def _cleared(event_id: UUID, at: float, snapshot: EventSnapshot) -> bool:
    """Whether ``event_id`` no longer held its aggregate at ``at``: published before it, or
    dead-lettered and released (or republished) before it."""
    publications = snapshot.publications.get(event_id)
    if publications:
        return publications[0][1] <= at
    resolutions = snapshot.dead_letters.get(event_id, [])
    return bool(resolutions) and all(
        resolved_at is not None and resolved_at <= at for _, resolved_at in resolutions
    )


def _audit_fences(snapshot: EventSnapshot, verdict: EventVerdict) -> None:
    records = {
        (t.message_id, t.at, t.old_token): t for t in snapshot.transitions if t.caller == "record"
    }
    matched: set[int] = set()
    for row in snapshot.attempts:
        change = records.get((row.record_id, row.recorded_at, row.lease_token))
        if change is None:
            verdict.fence_violations += 1
            verdict.stale_token_attempts += 1
            verdict.problem(f"fence {row.record_id}: attempt {row.attempt} under no lease seen")
            continue
        matched.add(change.id)
        live = (
            change.old_state == "leased"
            and change.old_lease_expires_at is not None
            and change.at < change.old_lease_expires_at
        )
        if not live:
            verdict.fence_violations += 1
            verdict.stale_token_attempts += 1
            verdict.problem(f"fence {row.record_id}: recorded under a stale lease")
    for change in records.values():
        if change.id not in matched and change.old_state == "leased":
            verdict.fence_violations += 1
            verdict.problem(f"fence {change.message_id}: a record left no history")
    tokens = Counter(t.new_token for t in snapshot.transitions if t.grants_lease)
    verdict.fence_violations += sum(n - 1 for n in tokens.values() if n > 1)


def _audit_offers(
    offers: Sequence[Offer],
    snapshot: EventSnapshot,
    owners: Mapping[str, str],
    untargeted: frozenset[str],
    verdict: EventVerdict,
) -> None:
    history: dict[UUID, list[Transition]] = defaultdict(list)
    publisher: dict[UUID, str | None] = {}  # event -> the owner that recorded it published
    for change in snapshot.transitions:
        history[change.message_id].append(change)
        if change.caller == "record" and change.new_state == "published":
            publisher[snapshot.records[change.message_id].event_id] = change.old_owner
    accepted: Counter[UUID] = Counter()
    newest: dict[Aggregate, int] = {}
    for offer in offers:
        verdict.offers += 1
        _audit_lease(offer, history.get(offer.record_id, []), owners, verdict)
        if offer.answer != ACCEPTED:
            continue
        accepted[offer.event_id] += 1
        if offer.append_sequence < newest.get(offer.aggregate, 0):
            verdict.target_order_violations += 1
            verdict.problem(f"target order {offer.aggregate}: {offer.event_id} after a later one")
        newest[offer.aggregate] = max(newest.get(offer.aggregate, 0), offer.append_sequence)
    verdict.re_offered = sum(1 for n in accepted.values() if n > 1)
    verdict.re_offers = sum(n - 1 for n in accepted.values() if n > 1)
    for event_id in snapshot.publications:
        if publisher.get(event_id) in untargeted:
            verdict.published_untargeted += 1
        elif accepted[event_id] == 0:
            verdict.published_unaccepted += 1
            verdict.problem(f"published {event_id}, never accepted by the target")


def _audit_lease(
    offer: Offer, changes: Sequence[Transition], owners: Mapping[str, str], verdict: EventVerdict
) -> None:
    """Was ``offer`` made under a lease its worker held: granted to it with the offer's token,
    and not yet run out or ended by the record's next change when the offer arrived?"""
    index = next(
        (i for i, c in enumerate(changes) if c.grants_lease and c.new_token == offer.lease_token),
        None,
    )
    if index is None:
        verdict.unleased_offers += 1
        verdict.problem(f"offer {offer.event_id} by {offer.worker}: under a token never granted")
        return
    grant = changes[index]
    if grant.new_owner != owners.get(offer.worker) or offer.received_at < grant.at:
        verdict.unleased_offers += 1
        verdict.problem(f"offer {offer.event_id} by {offer.worker}: under another's lease")
        return
    assert grant.new_lease_expires_at is not None
    ended = grant.new_lease_expires_at
    if index + 1 < len(changes):
        ended = min(ended, changes[index + 1].at)
    if offer.received_at >= ended:
        verdict.late_offers += 1
