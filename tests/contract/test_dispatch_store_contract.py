"""DispatchStore contract: claim, record, expire, purge and wake-ups behave alike everywhere."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import timedelta

import pytest

from outbox.application.delivery.ports import AttemptRecord, ClaimedMessage
from outbox.application.errors import InvalidRequest
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import State
from outbox.domain.delivery.outcomes import (
    DeadLetter,
    Outcome,
    Published,
    RecordResult,
    Release,
    Retry,
)
from outbox.domain.delivery.priorities import Priority
from outbox.domain.delivery.retention import RetentionPolicy
from outbox.domain.purposes import Purpose
from tests.contract.harness import ENVELOPE, Harness, make_message

LEASE = timedelta(seconds=60)
SHORT_LEASE = timedelta(seconds=0.3)
PAST_SHORT_LEASE = 0.5
# A retry time must be in the future: a retry this soon, then a wait past it, makes it due.
SOON_RETRY = 0.2
PAST_SOON_RETRY = 0.4
# Long enough to enqueue and claim before it passes even on a busy machine.
SOON = timedelta(seconds=1)
PAST_SOON = 1.2


def _record(
    claimed: ClaimedMessage, outcome: Outcome, *, attempt: int | None = None
) -> AttemptRecord:
    return AttemptRecord(
        message_id=claimed.id,
        lease_token=claimed.lease_token,
        attempt=claimed.attempts + 1 if attempt is None else attempt,
        outcome=outcome,
        provider="console",
    )


def _retry(outbox: Harness, seconds: float = 300) -> Retry:
    return Retry(
        available_at=outbox.now() + timedelta(seconds=seconds),
        failure_class=FailureClass.THROTTLED,
        code="429",
    )


async def test_claim_returns_a_due_message_with_its_envelope_and_a_lease(outbox: Harness) -> None:
    message = make_message(outbox, params={"name": "Ada", "plan": "pro"})
    await outbox.enqueue(message)

    [claimed] = await outbox.store.claim(owner="worker-1", limit=10, lease=LEASE)

    assert message.id == claimed.id
    assert (Purpose.SIGN_UP, message.channel, "person@example.com") == (
        claimed.purpose,
        claimed.channel,
        claimed.destination,
    )
    assert (message.subject_id, message.template, "en") == (
        claimed.subject_id,
        claimed.template,
        claimed.locale,
    )
    assert {"name": "Ada", "plan": "pro"} == dict(claimed.params)
    assert ENVELOPE == claimed.envelope
    assert 0 == claimed.attempts
    assert message.expires_at == claimed.expires_at
    view = await outbox.view(message.id)
    assert view is not None
    assert State.LEASED == view.state
    assert claimed.lease_token == view.lease_token


async def test_a_notification_is_claimed_without_an_envelope(outbox: Harness) -> None:
    await outbox.enqueue(make_message(outbox, purpose=Purpose.NOTIFICATION, expires_in=None))

    [claimed] = await outbox.store.claim(owner="worker-1", limit=1, lease=LEASE)

    assert claimed.envelope is None
    assert claimed.subject_id is None
    assert claimed.expires_at is None


async def test_claim_with_nothing_due_returns_nothing(outbox: Harness) -> None:
    assert [] == list(await outbox.store.claim(owner="worker-1", limit=10, lease=LEASE))


async def test_claim_never_returns_more_than_asked_and_takes_the_oldest_first(
    outbox: Harness,
) -> None:
    messages = [make_message(outbox) for _ in range(5)]
    for message in messages:
        await outbox.enqueue(message)
        await outbox.sleep(0.01)

    first = await outbox.store.claim(owner="worker-1", limit=2, lease=LEASE)
    rest = await outbox.store.claim(owner="worker-1", limit=10, lease=LEASE)

    assert [m.id for m in messages[:2]] == [c.id for c in first]
    assert [m.id for m in messages[2:]] == [c.id for c in rest]


async def test_claim_serves_higher_priorities_first_after_the_fair_slot(
    outbox: Harness,
) -> None:
    """A batch of ten gives one slot to the oldest due message, the rest highest first."""
    lows = [make_message(outbox, purpose=Purpose.NOTIFICATION, priority=Priority.LOW)]
    normals = [make_message(outbox, purpose=Purpose.NOTIFICATION) for _ in range(12)]
    codes = [make_message(outbox) for _ in range(3)]
    for message in [*lows, *normals, *codes]:
        await outbox.enqueue(message)
        await outbox.sleep(0.01)

    claimed = await outbox.store.claim(owner="worker-1", limit=10, lease=LEASE)

    # Returned highest first: the codes, then the oldest normals, then the fair-slot low one.
    assert [m.id for m in codes] + [m.id for m in normals[:6]] + [lows[0].id] == [
        c.id for c in claimed
    ]
    assert [Priority.HIGH] * 3 + [Priority.NORMAL] * 6 + [Priority.LOW] == [
        c.priority for c in claimed
    ]


async def test_an_urgent_claim_takes_only_high_priority_messages_oldest_first(
    outbox: Harness,
) -> None:
    """The reserved slot's claim (0049): codes and notices; no fair slot for the rest."""
    normals = [make_message(outbox, purpose=Purpose.NOTIFICATION) for _ in range(3)]
    codes = [make_message(outbox) for _ in range(3)]
    for message in [normals[0], codes[0], normals[1], codes[1], normals[2], codes[2]]:
        await outbox.enqueue(message)
        await outbox.sleep(0.01)

    first = await outbox.store.claim(owner="worker-1", limit=2, lease=LEASE, urgent=True)
    rest = await outbox.store.claim(owner="worker-1", limit=10, lease=LEASE, urgent=True)
    others = await outbox.store.claim(owner="worker-1", limit=10, lease=LEASE)

    assert [m.id for m in codes[:2]] == [c.id for c in first]
    assert [codes[2].id] == [c.id for c in rest]
    assert [m.id for m in normals] == [c.id for c in others]


async def test_batches_leave_a_fresh_code_to_the_slot_for_the_grace_only(
    outbox: Harness,
) -> None:
    """``leave_urgent`` (0064): batches whose reserved slot runs in another process leave it
    a code due for less than the grace, even in their fair slots; past it, the code is
    theirs again, so a slot that is down strands nothing."""
    code = make_message(outbox)
    normals = [make_message(outbox, purpose=Purpose.NOTIFICATION) for _ in range(12)]
    for message in [code, *normals]:
        await outbox.enqueue(message)
        await outbox.sleep(0.01)

    batch = await outbox.store.claim(owner="worker-1", limit=10, lease=LEASE, leave_urgent=SOON)
    await outbox.sleep(PAST_SOON)
    later = await outbox.store.claim(owner="worker-1", limit=10, lease=LEASE, leave_urgent=SOON)

    assert [m.id for m in normals[:10]] == [c.id for c in batch]
    assert [code.id, *(m.id for m in normals[10:])] == [c.id for c in later]
    with pytest.raises(InvalidRequest, match="p_leave_urgent_seconds"):
        await outbox.store.claim(
            owner="worker-1", limit=10, lease=LEASE, leave_urgent=timedelta(seconds=-1)
        )


async def test_a_delayed_message_is_claimed_only_from_not_before(outbox: Harness) -> None:
    delayed = make_message(outbox, not_before=outbox.now() + SOON)
    await outbox.enqueue(delayed)

    assert [] == list(await outbox.store.claim(owner="worker-1", limit=10, lease=LEASE))
    await outbox.sleep(PAST_SOON)
    [claimed] = await outbox.store.claim(owner="worker-1", limit=10, lease=LEASE)

    assert delayed.id == claimed.id


async def test_a_message_under_a_live_lease_is_not_claimed_again(outbox: Harness) -> None:
    await outbox.enqueue(make_message(outbox))
    await outbox.store.claim(owner="worker-1", limit=10, lease=LEASE)

    assert [] == list(await outbox.store.claim(owner="worker-2", limit=10, lease=LEASE))


async def test_an_expired_lease_is_reclaimable_with_the_same_attempt_count(outbox: Harness) -> None:
    await outbox.enqueue(make_message(outbox))
    [first] = await outbox.store.claim(owner="worker-1", limit=1, lease=LEASE)
    await outbox.store.record([_record(first, _retry(outbox, seconds=SOON_RETRY))])
    await outbox.sleep(PAST_SOON_RETRY)
    [second] = await outbox.store.claim(owner="worker-1", limit=1, lease=SHORT_LEASE)
    await outbox.sleep(PAST_SHORT_LEASE)

    [third] = await outbox.store.claim(owner="worker-2", limit=1, lease=LEASE)

    assert first.id == second.id == third.id
    assert 1 == second.attempts == third.attempts
    assert second.lease_token != third.lease_token


async def test_claim_dead_letters_expired_candidates_instead_of_returning_them(
    outbox: Harness,
) -> None:
    code = make_message(outbox, expires_in=SOON)
    invitation = make_message(outbox, purpose=Purpose.INVITATION, expires_in=SOON)
    fresh = make_message(outbox)
    for message in (code, invitation, fresh):
        await outbox.enqueue(message)
    await outbox.sleep(PAST_SOON)

    claimed = await outbox.store.claim(owner="worker-1", limit=10, lease=LEASE)

    assert [fresh.id] == [c.id for c in claimed]
    code_view, invitation_view = await outbox.view(code.id), await outbox.view(invitation.id)
    assert code_view is not None
    assert invitation_view is not None
    assert (State.DEAD_LETTERED, FailureClass.CHALLENGE_EXPIRED, False) == (
        code_view.state,
        code_view.reason,
        code_view.has_envelope,
    )
    assert FailureClass.INVITATION_EXPIRED == invitation_view.reason


@pytest.mark.parametrize(
    ("limit", "lease", "owner"),
    [(0, LEASE, "worker-1"), (1, timedelta(0), "worker-1"), (1, LEASE, "")],
)
async def test_claim_refuses_a_nonsensical_request(
    outbox: Harness, limit: int, lease: timedelta, owner: str
) -> None:
    with pytest.raises(InvalidRequest):
        await outbox.store.claim(owner=owner, limit=limit, lease=lease)


async def test_recording_published_makes_the_message_final_and_deletes_the_envelope(
    outbox: Harness,
) -> None:
    await outbox.enqueue(make_message(outbox))
    [claimed] = await outbox.store.claim(owner="worker-1", limit=1, lease=LEASE)

    results = await outbox.store.record([_record(claimed, Published(provider_message_id="r-1"))])

    assert [RecordResult.RECORDED] == list(results)
    view = await outbox.view(claimed.id)
    assert view is not None
    assert (State.PUBLISHED, 1, False, None) == (
        view.state,
        view.attempts,
        view.has_envelope,
        view.lease_token,
    )
    assert [(1, True)] == await outbox.history(claimed.id)


async def test_each_history_row_names_the_lease_it_was_recorded_under(outbox: Harness) -> None:
    """The reliability audit compares these tokens with the leases workers held."""
    await outbox.enqueue(make_message(outbox))
    [first] = await outbox.store.claim(owner="worker-1", limit=1, lease=LEASE)
    await outbox.store.record([_record(first, _retry(outbox, seconds=SOON_RETRY))])
    await outbox.sleep(PAST_SOON_RETRY)
    [second] = await outbox.store.claim(owner="worker-2", limit=1, lease=LEASE)
    await outbox.store.record([_record(second, Published())])

    assert first.lease_token != second.lease_token
    assert [first.lease_token, second.lease_token] == await outbox.history_tokens(first.id)


async def test_recording_a_retry_counts_the_attempt_and_waits_until_the_retry_time(
    outbox: Harness,
) -> None:
    await outbox.enqueue(make_message(outbox))
    [claimed] = await outbox.store.claim(owner="worker-1", limit=1, lease=LEASE)
    retry = _retry(outbox)

    await outbox.store.record([_record(claimed, retry)])

    view = await outbox.view(claimed.id)
    assert view is not None
    assert (State.PENDING, 1, True, retry.available_at) == (
        view.state,
        view.attempts,
        view.has_envelope,
        view.available_at,
    )
    assert [] == list(await outbox.store.claim(owner="worker-1", limit=1, lease=LEASE))


@pytest.mark.parametrize("seconds", [0, -1, -86400])
async def test_a_retry_time_not_in_the_future_is_refused_and_nothing_is_recorded(
    outbox: Harness, seconds: float
) -> None:
    """Due at once would skip the backoff; the whole batch is refused, as its other checks."""
    await outbox.enqueue(make_message(outbox))
    await outbox.enqueue(make_message(outbox))
    first, second = await outbox.store.claim(owner="worker-1", limit=2, lease=LEASE)

    with pytest.raises(InvalidRequest):
        await outbox.store.record(
            [_record(first, Published()), _record(second, _retry(outbox, seconds=seconds))]
        )

    assert [State.LEASED, State.LEASED] == [
        view.state for view in [await outbox.view(first.id), await outbox.view(second.id)] if view
    ]


async def test_a_retry_due_now_is_claimed_again_with_its_attempt_count(outbox: Harness) -> None:
    await outbox.enqueue(make_message(outbox))
    [claimed] = await outbox.store.claim(owner="worker-1", limit=1, lease=LEASE)
    await outbox.store.record([_record(claimed, _retry(outbox, seconds=SOON_RETRY))])
    await outbox.sleep(PAST_SOON_RETRY)

    [again] = await outbox.store.claim(owner="worker-1", limit=1, lease=LEASE)

    assert claimed.id == again.id
    assert 1 == again.attempts
    assert ENVELOPE == again.envelope


async def test_a_release_returns_the_message_without_spending_an_attempt(outbox: Harness) -> None:
    await outbox.enqueue(make_message(outbox))
    [claimed] = await outbox.store.claim(owner="worker-1", limit=1, lease=LEASE)
    release = Release(
        available_at=outbox.now() + timedelta(minutes=1),
        failure_class=FailureClass.PROVIDER_SUSPENDED,
    )

    await outbox.store.record([_record(claimed, release)])

    view = await outbox.view(claimed.id)
    assert view is not None
    assert (State.PENDING, 0, release.available_at) == (
        view.state,
        view.attempts,
        view.available_at,
    )
    assert [(1, False)] == await outbox.history(claimed.id)


@pytest.mark.parametrize(("attempted", "attempts"), [(True, 1), (False, 0)])
async def test_a_dead_letter_is_final_and_counts_only_when_a_send_was_tried(
    outbox: Harness, attempted: bool, attempts: int
) -> None:
    await outbox.enqueue(make_message(outbox))
    [claimed] = await outbox.store.claim(owner="worker-1", limit=1, lease=LEASE)
    outcome = DeadLetter(reason=FailureClass.REJECTED, code="550", attempted=attempted)

    assert [RecordResult.RECORDED] == list(await outbox.store.record([_record(claimed, outcome)]))

    view = await outbox.view(claimed.id)
    assert view is not None
    assert (State.DEAD_LETTERED, FailureClass.REJECTED, attempts, False) == (
        view.state,
        view.reason,
        view.attempts,
        view.has_envelope,
    )


async def test_a_stale_token_is_refused_and_changes_nothing(outbox: Harness) -> None:
    await outbox.enqueue(make_message(outbox))
    [claimed] = await outbox.store.claim(owner="worker-1", limit=1, lease=LEASE)
    before = await outbox.view(claimed.id)
    stale = AttemptRecord(
        message_id=claimed.id,
        lease_token=uuid.uuid4(),
        attempt=1,
        outcome=Published(),
    )

    assert [RecordResult.LEASE_LOST] == list(await outbox.store.record([stale]))
    assert before == await outbox.view(claimed.id)
    assert [] == await outbox.history(claimed.id)


async def test_recording_after_the_lease_expired_is_refused_even_if_nobody_reclaimed(
    outbox: Harness,
) -> None:
    await outbox.enqueue(make_message(outbox))
    [claimed] = await outbox.store.claim(owner="worker-1", limit=1, lease=SHORT_LEASE)
    await outbox.sleep(PAST_SHORT_LEASE)
    before = await outbox.view(claimed.id)

    results = await outbox.store.record([_record(claimed, Published())])

    assert [RecordResult.LEASE_LOST] == list(results)
    assert before == await outbox.view(claimed.id)


async def test_recording_twice_is_refused_the_second_time(outbox: Harness) -> None:
    await outbox.enqueue(make_message(outbox))
    [claimed] = await outbox.store.claim(owner="worker-1", limit=1, lease=LEASE)
    await outbox.store.record([_record(claimed, Published())])
    after_first = await outbox.view(claimed.id)

    again = await outbox.store.record([_record(claimed, DeadLetter(reason=FailureClass.REJECTED))])

    assert [RecordResult.LEASE_LOST] == list(again)
    assert after_first == await outbox.view(claimed.id)
    assert [(1, True)] == await outbox.history(claimed.id)


async def test_the_same_message_twice_in_one_batch_is_recorded_once(outbox: Harness) -> None:
    await outbox.enqueue(make_message(outbox))
    [claimed] = await outbox.store.claim(owner="worker-1", limit=1, lease=LEASE)

    results = await outbox.store.record(
        [_record(claimed, Published()), _record(claimed, Published())]
    )

    assert sorted([RecordResult.RECORDED, RecordResult.LEASE_LOST]) == sorted(results)
    assert [(1, True)] == await outbox.history(claimed.id)


async def test_a_wrong_attempt_number_is_refused(outbox: Harness) -> None:
    await outbox.enqueue(make_message(outbox))
    [claimed] = await outbox.store.claim(owner="worker-1", limit=1, lease=LEASE)

    results = await outbox.store.record([_record(claimed, Published(), attempt=2)])

    assert [RecordResult.LEASE_LOST] == list(results)
    view = await outbox.view(claimed.id)
    assert view is not None
    assert State.LEASED == view.state


async def test_a_batch_answers_each_record_in_order(outbox: Harness) -> None:
    for _ in range(3):
        await outbox.enqueue(make_message(outbox))
    first, second, third = await outbox.store.claim(owner="worker-1", limit=3, lease=LEASE)
    stale = AttemptRecord(
        message_id=second.id, lease_token=uuid.uuid4(), attempt=1, outcome=Published()
    )

    results = await outbox.store.record(
        [_record(first, Published()), stale, _record(third, _retry(outbox))]
    )

    assert [RecordResult.RECORDED, RecordResult.LEASE_LOST, RecordResult.RECORDED] == list(results)


async def test_recording_an_empty_batch_answers_nothing(outbox: Harness) -> None:
    assert [] == list(await outbox.store.record([]))


async def test_expire_dead_letters_expired_messages_nobody_holds(outbox: Harness) -> None:
    pending = make_message(outbox, expires_in=SOON)
    held = make_message(outbox, expires_in=SOON)
    await outbox.enqueue(held)
    [claimed] = await outbox.store.claim(owner="worker-1", limit=1, lease=LEASE)
    await outbox.enqueue(pending)
    await outbox.enqueue(make_message(outbox))
    await outbox.sleep(PAST_SOON)

    assert 1 == await outbox.store.expire(limit=100)

    pending_view, held_view = await outbox.view(pending.id), await outbox.view(held.id)
    assert pending_view is not None
    assert held_view is not None
    assert (State.DEAD_LETTERED, FailureClass.CHALLENGE_EXPIRED, False) == (
        pending_view.state,
        pending_view.reason,
        pending_view.has_envelope,
    )
    assert State.LEASED == held_view.state
    assert [RecordResult.RECORDED] == list(
        await outbox.store.record([_record(claimed, Published())])
    )


async def test_expire_takes_at_most_the_limit(outbox: Harness) -> None:
    for _ in range(3):
        await outbox.enqueue(make_message(outbox, expires_in=SOON))
    await outbox.sleep(PAST_SOON)

    assert 2 == await outbox.store.expire(limit=2)
    assert 1 == await outbox.store.expire(limit=2)
    assert 0 == await outbox.store.expire(limit=2)


async def test_purge_deletes_final_messages_past_retention_with_history_only(
    outbox: Harness,
) -> None:
    for _ in range(3):
        await outbox.enqueue(make_message(outbox))
    published, dead, live = await outbox.store.claim(owner="worker-1", limit=3, lease=LEASE)
    await outbox.store.record(
        [
            _record(published, Published()),
            _record(dead, DeadLetter(reason=FailureClass.REJECTED)),
        ]
    )
    await outbox.sleep(0.05)
    keep_all = RetentionPolicy(published=timedelta(days=30), dead_lettered=timedelta(days=90))
    drop_all = RetentionPolicy(published=timedelta(0), dead_lettered=timedelta(0))

    assert 0 == await outbox.store.purge(retention=keep_all, limit=100)
    assert 2 == await outbox.store.purge(retention=drop_all, limit=100)

    assert await outbox.view(published.id) is None
    assert await outbox.view(dead.id) is None
    assert [] == await outbox.history(published.id)
    assert await outbox.view(live.id) is not None


async def test_purge_takes_at_most_the_limit(outbox: Harness) -> None:
    for _ in range(3):
        await outbox.enqueue(make_message(outbox))
    claimed = await outbox.store.claim(owner="worker-1", limit=3, lease=LEASE)
    await outbox.store.record([_record(c, Published()) for c in claimed])
    await outbox.sleep(0.05)
    drop_all = RetentionPolicy(published=timedelta(0), dead_lettered=timedelta(0))

    assert 2 == await outbox.store.purge(retention=drop_all, limit=2)
    assert 1 == await outbox.store.purge(retention=drop_all, limit=2)


async def test_wait_for_work_returns_after_the_timeout_when_nothing_happens(
    outbox: Harness,
) -> None:
    started = time.monotonic()
    await outbox.store.wait_for_work(0.2)
    assert time.monotonic() - started >= 0.15


async def test_wait_for_work_wakes_up_when_a_producer_enqueues(outbox: Harness) -> None:
    await outbox.store.wait_for_work(0)  # starts listening
    waiter = asyncio.create_task(outbox.store.wait_for_work(30))
    await asyncio.sleep(0.1)
    started = time.monotonic()

    await outbox.enqueue(make_message(outbox, purpose=Purpose.NOTIFICATION))
    await asyncio.wait_for(waiter, 10)

    assert time.monotonic() - started < 10


async def test_a_code_wakes_the_reserved_slot_and_not_the_batches(outbox: Harness) -> None:
    """0065: the batches' claims for a code found nothing while the slot ran apart."""
    await outbox.store.wait_for_work(0)  # starts listening
    waiter = asyncio.create_task(outbox.store.wait_for_work(0.5))
    await asyncio.sleep(0.1)

    await outbox.enqueue(make_message(outbox))
    started = time.monotonic()
    await asyncio.wait_for(waiter, 10)

    assert time.monotonic() - started >= 0.2  # it ran out its timeout
