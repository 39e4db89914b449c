"""Publishing tenant events: every target must accept, refusals follow the retry schedule."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from datetime import timedelta

import attrs
import pytest

from outbox.application.delivery.batch import BatchTally
from outbox.application.events.ports import ClaimedEvent, TargetRefusal
from outbox.application.events.publish_due_events import PublishDueEvents
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.retry_policy import RetryPolicy
from tests.contract.event_outbox_harness import new_event
from tests.fakes.event_outbox import InMemoryEventOutbox
from tests.fakes.telemetry import RecordingTelemetry

ACME, GLOBEX = uuid.UUID(int=1), uuid.UUID(int=2)
MARKER = "payload-that-never-reaches-a-log"


@attrs.define
class Target:
    """A publication target answering from a script: ``refuse`` per event id, or raising."""

    name: str = "relay"
    refuse: dict[uuid.UUID, TargetRefusal] = attrs.field(factory=dict)
    error: Exception | None = None
    delay: float = 0.0
    answers_short: bool = False
    calls: list[list[uuid.UUID]] = attrs.field(factory=list)

    async def publish(self, events: Sequence[ClaimedEvent]) -> Sequence[TargetRefusal | None]:
        self.calls.append([event.event_id for event in events])
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.error is not None:
            raise self.error
        answers = [self.refuse.get(event.event_id) for event in events]
        return answers[:-1] if self.answers_short else answers


@attrs.define
class FreezingTarget:
    """Accepts, but the worker was frozen meanwhile: the clock jumps past the lease."""

    outbox: InMemoryEventOutbox
    name: str = "slow"

    async def publish(self, events: Sequence[ClaimedEvent]) -> Sequence[TargetRefusal | None]:
        self.outbox.clock.advance(timedelta(seconds=61))
        return [None] * len(events)


@pytest.fixture
def outbox() -> InMemoryEventOutbox:
    store = InMemoryEventOutbox()
    store.register_event_type("sales.order_placed")
    return store


def _publish(
    outbox: InMemoryEventOutbox,
    *targets: object,
    telemetry: RecordingTelemetry | None = None,
    **options: object,
) -> PublishDueEvents:
    return PublishDueEvents(
        store=outbox,
        targets=targets,  # type: ignore[arg-type]
        clock=outbox.clock,
        telemetry=telemetry or RecordingTelemetry(),
        policy=RetryPolicy(),
        owner="worker-1",
        **options,  # type: ignore[arg-type]
    )


async def _append(
    outbox: InMemoryEventOutbox, organization: uuid.UUID, aggregate: str
) -> uuid.UUID:
    return await outbox.append(new_event(organization, aggregate, payload={"note": MARKER}))


def _history(outbox: InMemoryEventOutbox, event_id: uuid.UUID) -> list[tuple[str, str, str]]:
    record = outbox.record_of(event_id)
    return [
        (a.outcome, a.failure_class.value if a.failure_class else "", a.target)
        for a in outbox.attempts
        if a.record_id == record.id
    ]


async def test_with_no_target_every_claimed_event_is_published_at_once(
    outbox: InMemoryEventOutbox,
) -> None:
    ids = [await _append(outbox, org, f"order-{n}") for org in (ACME, GLOBEX) for n in range(3)]

    result = await _publish(outbox)()

    assert BatchTally(claimed=6, published=6) == result
    assert set(ids) == {p.event_id for p in outbox.publications}


async def test_an_event_is_published_only_when_every_target_accepted(
    outbox: InMemoryEventOutbox,
) -> None:
    accepted, refused = await _append(outbox, ACME, "a"), await _append(outbox, ACME, "b")
    first = Target(name="first")
    second = Target(
        name="second", refuse={refused: TargetRefusal(failure_class=FailureClass.UNAVAILABLE)}
    )

    result = await _publish(outbox, first, second)()

    assert BatchTally(claimed=2, published=1, retried=1) == result
    assert [accepted] == [p.event_id for p in outbox.publications]
    assert [("retry", "UNAVAILABLE", "second")] == _history(outbox, refused)
    assert [("published", "", "")] == _history(outbox, accepted)


async def test_an_event_one_target_refused_is_not_offered_to_the_next(
    outbox: InMemoryEventOutbox,
) -> None:
    refused = await _append(outbox, ACME, "a")
    first = Target(refuse={refused: TargetRefusal(failure_class=FailureClass.THROTTLED)})
    second = Target(name="second")

    await _publish(outbox, first, second)()

    assert [] == second.calls


async def test_a_refusal_waits_the_first_step_of_the_schedule(outbox: InMemoryEventOutbox) -> None:
    event = await _append(outbox, ACME, "a")
    target = Target(refuse={event: TargetRefusal(failure_class=FailureClass.THROTTLED)})

    await _publish(outbox, target)()

    assert outbox.clock.now() + timedelta(seconds=5) == outbox.record_of(event).available_at


async def test_a_retry_after_later_than_the_schedule_wins(outbox: InMemoryEventOutbox) -> None:
    event = await _append(outbox, ACME, "a")
    hint = TargetRefusal(failure_class=FailureClass.THROTTLED, retry_after=timedelta(minutes=3))

    await _publish(outbox, Target(refuse={event: hint}))()

    assert outbox.clock.now() + timedelta(minutes=3) == outbox.record_of(event).available_at


@pytest.mark.parametrize("hint", [timedelta(seconds=-30), timedelta(days=2), timedelta(0)])
async def test_an_absurd_retry_after_falls_back_to_the_schedule(
    outbox: InMemoryEventOutbox, hint: timedelta
) -> None:
    event = await _append(outbox, ACME, "a")
    refusal = TargetRefusal(failure_class=FailureClass.THROTTLED, retry_after=hint)

    await _publish(outbox, Target(refuse={event: refusal}))()

    assert outbox.clock.now() + timedelta(seconds=5) == outbox.record_of(event).available_at


async def test_a_rejection_dead_letters_and_parks_the_aggregate(
    outbox: InMemoryEventOutbox,
) -> None:
    first = await _append(outbox, ACME, "a")
    later = await _append(outbox, ACME, "a")
    other = await _append(outbox, ACME, "b")
    target = Target(refuse={first: TargetRefusal(failure_class=FailureClass.REJECTED, code="400")})

    assert BatchTally(claimed=2, published=1, dead_lettered=1) == (await _publish(outbox, target)())
    assert BatchTally() == await _publish(outbox, target)()  # `later` waits, parked
    assert "dead_lettered" == outbox.record_of(first).state
    assert "pending" == outbox.record_of(later).state
    assert [other] == [p.event_id for p in outbox.publications]


async def test_the_fifth_failed_attempt_dead_letters(outbox: InMemoryEventOutbox) -> None:
    event = await _append(outbox, ACME, "a")
    target = Target(refuse={event: TargetRefusal(failure_class=FailureClass.UNAVAILABLE)})
    publish = _publish(outbox, target)
    results = []
    for _ in range(5):
        results.append(await publish())
        outbox.clock.advance(timedelta(hours=1))

    assert [1, 1, 1, 1, 0] == [r.retried for r in results]
    assert 1 == results[-1].dead_lettered
    assert ["retry"] * 4 + ["dead_letter"] == [o for o, _, _ in _history(outbox, event)]


async def test_a_suspended_target_releases_without_spending_an_attempt(
    outbox: InMemoryEventOutbox,
) -> None:
    event = await _append(outbox, ACME, "a")
    refusal = TargetRefusal(failure_class=FailureClass.PROVIDER_SUSPENDED)

    result = await _publish(outbox, Target(refuse={event: refusal}))()

    assert 1 == result.released
    assert 0 == outbox.record_of(event).attempts


async def test_a_target_that_raises_costs_one_counted_attempt_and_keeps_no_text(
    outbox: InMemoryEventOutbox,
) -> None:
    event = await _append(outbox, ACME, "a")
    telemetry = RecordingTelemetry()
    target = Target(error=RuntimeError("connection to nats://user:hunter2@relay failed"))

    result = await _publish(outbox, target, telemetry=telemetry)()

    assert 1 == result.retried
    assert [("retry", "unexpected_worker_error", "relay")] == _history(outbox, event)
    assert "RuntimeError" == outbox.attempts[0].code
    [error] = telemetry.named("event.unexpected_error")
    assert "RuntimeError" == error.fields["error"]
    assert "hunter2" not in repr(telemetry.events)


async def test_a_target_answering_for_too_few_events_is_an_unexpected_error(
    outbox: InMemoryEventOutbox,
) -> None:
    await _append(outbox, ACME, "a")
    await _append(outbox, ACME, "b")

    result = await _publish(outbox, Target(answers_short=True))()

    assert BatchTally(claimed=2, retried=2) == result
    assert {"unexpected_worker_error"} == {a.failure_class for a in outbox.attempts}


async def test_a_failure_class_no_target_may_give_is_an_unexpected_error(
    outbox: InMemoryEventOutbox,
) -> None:
    event = await _append(outbox, ACME, "a")
    odd = TargetRefusal(failure_class=FailureClass.LINK_UNCONFIGURED)

    await _publish(outbox, Target(refuse={event: odd}))()

    [attempt] = outbox.attempts
    assert (FailureClass.UNEXPECTED_WORKER_ERROR, "link_unconfigured") == (
        attempt.failure_class,
        attempt.code,
    )


async def test_a_target_slower_than_its_timeout_is_indeterminate(
    outbox: InMemoryEventOutbox,
) -> None:
    event = await _append(outbox, ACME, "a")
    publish = _publish(outbox, Target(delay=5), target_timeout=timedelta(seconds=0.01))

    assert 1 == (await publish()).retried
    [attempt] = outbox.attempts
    assert (FailureClass.INDETERMINATE, "timeout") == (attempt.failure_class, attempt.code)
    assert event == outbox.records[attempt.record_id].event.id


async def test_no_publication_starts_once_the_lease_has_run_out(
    outbox: InMemoryEventOutbox,
) -> None:
    """A worker frozen past its lease offers nothing more and records nothing."""
    await _append(outbox, ACME, "a")
    later = Target(name="later")

    result = await _publish(outbox, FreezingTarget(outbox), later)()

    assert BatchTally(claimed=1, lease_lost=1) == result
    assert [] == later.calls
    assert [] == outbox.attempts


async def test_a_batch_is_offered_in_concurrency_slices(outbox: InMemoryEventOutbox) -> None:
    for n in range(10):
        await _append(outbox, ACME, f"order-{n}")
    target = Target()

    result = await _publish(outbox, target, concurrency=3)()

    assert 10 == result.published
    assert [4, 4, 2] == sorted((len(call) for call in target.calls), reverse=True)


async def test_a_record_under_a_lost_lease_is_counted_lease_lost(
    outbox: InMemoryEventOutbox,
) -> None:
    await _append(outbox, ACME, "a")
    telemetry = RecordingTelemetry()

    @attrs.define
    class Stealer:
        """Another worker reclaims the record while this one is publishing."""

        name: str = "stealer"

        async def publish(self, events: Sequence[ClaimedEvent]) -> Sequence[None]:
            for record in outbox.records.values():
                record.lease_token = uuid.uuid4()
            return [None] * len(events)

    result = await _publish(outbox, Stealer(), telemetry=telemetry)()

    assert BatchTally(claimed=1, lease_lost=1) == result
    assert 1 == len(telemetry.named("event.lease_lost"))
    assert ("outbox_event_publications_total", 1, {"outcome": "lease_lost"}) in telemetry.counts


async def test_telemetry_names_events_and_never_carries_a_payload(
    outbox: InMemoryEventOutbox,
) -> None:
    event = await _append(outbox, ACME, "a")
    telemetry = RecordingTelemetry()

    await _publish(outbox, telemetry=telemetry)()

    [published] = telemetry.named("event.published")
    assert str(event) == published.fields["event_id"]
    assert str(ACME) == published.fields["organization_id"]
    [batch] = telemetry.named("event_batch.published")
    assert 1 == batch.fields["published"]
    assert ("outbox_event_publications_total", 1, {"outcome": "published"}) in telemetry.counts
    assert MARKER not in repr(telemetry.events)


async def test_an_empty_claim_does_nothing_and_reports_nothing(
    outbox: InMemoryEventOutbox,
) -> None:
    telemetry = RecordingTelemetry()

    assert BatchTally() == await _publish(outbox, telemetry=telemetry)()
    assert [] == telemetry.events
    # Its time is still observed: under a held horizon an empty claim can be a slow one.
    [(name, seconds, labels)] = telemetry.observations
    assert ("outbox_event_claim_seconds", {}) == (name, labels)
    assert seconds >= 0


async def test_a_target_that_is_down_spends_no_attempt_and_pauses_the_lane_until_a_probe(
    outbox: InMemoryEventOutbox,
) -> None:
    ids = [await _append(outbox, ACME, f"order-{n}") for n in range(3)]
    down = TargetRefusal(failure_class=FailureClass.PROVIDER_SUSPENDED, code="no_connection")
    target = Target(refuse=dict.fromkeys(ids, down))
    telemetry = RecordingTelemetry()
    publish = _publish(outbox, target, telemetry=telemetry)

    first = await publish()
    paused = await publish()  # the probe is not due: nothing is claimed
    outbox.clock.advance(RetryPolicy().suspension_probe + timedelta(seconds=1))
    probe = await publish()  # one event, still refused: paused again, said once
    outbox.clock.advance(RetryPolicy().suspension_probe + timedelta(seconds=1))
    target.refuse.clear()
    resumed = await publish()
    rest = await publish()

    assert BatchTally(claimed=3, released=3) == first
    assert BatchTally() == paused
    assert BatchTally(claimed=1, released=1) == probe
    assert (1, 1) == (resumed.claimed, resumed.published)
    assert 2 == rest.published
    assert set(ids) == {p.event_id for p in outbox.publications}
    assert {1} == {record.attempts for record in map(outbox.record_of, ids)}  # the publication
    said = [(e.name, e.level) for e in telemetry.events if e.name.startswith("relay.target_")]
    assert [("relay.target_suspended", "warning"), ("relay.target_resumed", "info")] == said
    assert not [
        e
        for e in telemetry.events
        if e.level in ("warning", "error") and e.name.startswith("event.")
    ]
