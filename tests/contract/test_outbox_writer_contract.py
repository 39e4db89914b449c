"""OutboxWriter contract: enqueue, supersede (a resend) and cancel behave alike everywhere."""

from __future__ import annotations

import uuid
from datetime import timedelta

import attrs
import pytest

from outbox.application.delivery.errors import DuplicateMessage
from outbox.application.delivery.ports import AttemptRecord
from outbox.application.errors import InvalidRequest
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import State
from outbox.domain.delivery.outcomes import Published, RecordResult
from outbox.domain.purposes import Purpose
from tests.contract.harness import Harness, make_message

LEASE = timedelta(seconds=60)


async def test_enqueue_stores_a_pending_message_with_its_envelope(outbox: Harness) -> None:
    message = make_message(outbox)

    await outbox.enqueue(message)

    view = await outbox.view(message.id)
    assert view is not None
    assert (State.PENDING, 0, True, None) == (
        view.state,
        view.attempts,
        view.has_envelope,
        view.lease_token,
    )


async def test_enqueue_refuses_a_duplicate_id(outbox: Harness) -> None:
    message = make_message(outbox)
    await outbox.enqueue(message)

    with pytest.raises(DuplicateMessage):
        await outbox.enqueue(message)


@pytest.mark.parametrize(
    "secret",
    ["123456", "plain-token-without-version", "v1.", "v1.only-one-part"],
)
async def test_enqueue_refuses_a_secret_that_is_not_an_envelope(
    outbox: Harness, secret: str
) -> None:
    message = attrs.evolve(make_message(outbox), sealed_secret=secret)

    with pytest.raises(InvalidRequest):
        await outbox.enqueue(message)
    assert await outbox.view(message.id) is None


async def test_enqueue_refuses_a_code_purpose_without_a_secret(outbox: Harness) -> None:
    message = attrs.evolve(make_message(outbox), sealed_secret=None)

    with pytest.raises(InvalidRequest):
        await outbox.enqueue(message)


async def test_enqueue_refuses_a_message_that_already_expired(outbox: Harness) -> None:
    message = make_message(outbox, expires_in=timedelta(seconds=0.1))
    await outbox.sleep(0.2)

    with pytest.raises(InvalidRequest):
        await outbox.enqueue(message)


@pytest.mark.parametrize(
    "purpose",
    [
        Purpose.SIGN_UP,
        Purpose.ADD_SIGN_IN_METHOD,
        Purpose.PASSWORD_RECOVERY,
        Purpose.STEP_UP,
        Purpose.MAGIC_LINK,
    ],
)
async def test_a_newer_message_supersedes_older_live_ones_of_its_subject(
    outbox: Harness, purpose: Purpose
) -> None:
    subject = uuid.uuid4()
    pending = make_message(outbox, purpose=purpose, subject_id=subject)
    await outbox.enqueue(pending)
    resend = make_message(outbox, purpose=purpose, subject_id=subject)

    await outbox.enqueue(resend)

    old, new = await outbox.view(pending.id), await outbox.view(resend.id)
    assert old is not None
    assert new is not None
    assert (State.DEAD_LETTERED, FailureClass.SUPERSEDED_BY_RESEND, False) == (
        old.state,
        old.reason,
        old.has_envelope,
    )
    assert State.PENDING == new.state


async def test_invitations_are_never_superseded(outbox: Harness) -> None:
    subject = uuid.uuid4()
    first = make_message(outbox, purpose=Purpose.INVITATION, subject_id=subject)
    second = make_message(outbox, purpose=Purpose.INVITATION, subject_id=subject)
    await outbox.enqueue(first)
    await outbox.enqueue(second)

    view = await outbox.view(first.id)
    assert view is not None
    assert State.PENDING == view.state


async def test_a_message_of_another_purpose_or_subject_supersedes_nothing(outbox: Harness) -> None:
    subject = uuid.uuid4()
    original = make_message(outbox, purpose=Purpose.SIGN_UP, subject_id=subject)
    await outbox.enqueue(original)

    await outbox.enqueue(make_message(outbox, purpose=Purpose.STEP_UP, subject_id=subject))
    await outbox.enqueue(make_message(outbox, purpose=Purpose.SIGN_UP))

    view = await outbox.view(original.id)
    assert view is not None
    assert State.PENDING == view.state


async def test_a_resend_while_a_worker_holds_the_lease_fences_the_worker(outbox: Harness) -> None:
    subject = uuid.uuid4()
    await outbox.enqueue(make_message(outbox, subject_id=subject))
    [held] = await outbox.store.claim(owner="worker-1", limit=1, lease=LEASE)
    resend = make_message(outbox, subject_id=subject)

    await outbox.enqueue(resend)
    late = await outbox.store.record(
        [
            AttemptRecord(
                message_id=held.id, lease_token=held.lease_token, attempt=1, outcome=Published()
            )
        ]
    )

    assert [RecordResult.LEASE_LOST] == list(late)
    [sendable] = await outbox.store.claim(owner="worker-2", limit=10, lease=LEASE)
    assert resend.id == sendable.id


async def test_a_resend_after_publication_supersedes_nothing(outbox: Harness) -> None:
    subject = uuid.uuid4()
    await outbox.enqueue(make_message(outbox, subject_id=subject))
    [sent] = await outbox.store.claim(owner="worker-1", limit=1, lease=LEASE)
    await outbox.store.record(
        [
            AttemptRecord(
                message_id=sent.id, lease_token=sent.lease_token, attempt=1, outcome=Published()
            )
        ]
    )

    await outbox.enqueue(make_message(outbox, subject_id=subject))

    view = await outbox.view(sent.id)
    assert view is not None
    assert (State.PUBLISHED, None) == (view.state, view.reason)


@pytest.mark.parametrize(
    "reason", [FailureClass.CHALLENGE_CONSUMED, FailureClass.INVITATION_REVOKED]
)
async def test_cancel_by_subject_withdraws_every_live_message_and_fences_leases(
    outbox: Harness, reason: FailureClass
) -> None:
    subject = uuid.uuid4()
    await outbox.enqueue(make_message(outbox, purpose=Purpose.INVITATION, subject_id=subject))
    [held] = await outbox.store.claim(owner="worker-1", limit=1, lease=LEASE)
    waiting = make_message(outbox, purpose=Purpose.INVITATION, subject_id=subject)
    await outbox.enqueue(waiting)
    other = make_message(outbox, purpose=Purpose.INVITATION)
    await outbox.enqueue(other)

    assert 2 == await outbox.cancel(subject, reason)

    for message_id in (held.id, waiting.id):
        view = await outbox.view(message_id)
        assert view is not None
        assert (State.DEAD_LETTERED, reason, False) == (view.state, view.reason, view.has_envelope)
    other_view = await outbox.view(other.id)
    assert other_view is not None
    assert State.PENDING == other_view.state
    late = await outbox.store.record(
        [
            AttemptRecord(
                message_id=held.id, lease_token=held.lease_token, attempt=1, outcome=Published()
            )
        ]
    )
    assert [RecordResult.LEASE_LOST] == list(late)


async def test_cancel_by_subject_with_nothing_live_cancels_nothing(outbox: Harness) -> None:
    assert 0 == await outbox.cancel(uuid.uuid4(), FailureClass.CHALLENGE_CONSUMED)


async def test_cancel_by_subject_refuses_a_reason_that_is_not_a_cancellation(
    outbox: Harness,
) -> None:
    with pytest.raises(InvalidRequest):
        await outbox.cancel(uuid.uuid4(), FailureClass.REJECTED)


TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


async def test_the_claim_returns_the_trace_context_the_producer_gave(outbox: Harness) -> None:
    traced = make_message(outbox, trace_context=TRACEPARENT)
    untraced = make_message(outbox)
    await outbox.enqueue(traced)
    await outbox.enqueue(untraced)

    claimed = await outbox.store.claim(owner="w", limit=10, lease=LEASE)

    assert {traced.id: TRACEPARENT, untraced.id: None} == {c.id: c.trace_context for c in claimed}


async def test_enqueue_refuses_a_malformed_trace_context(outbox: Harness) -> None:
    message = attrs.evolve(make_message(outbox), trace_context="00-not-a-traceparent")

    with pytest.raises(InvalidRequest):
        await outbox.enqueue(message)
