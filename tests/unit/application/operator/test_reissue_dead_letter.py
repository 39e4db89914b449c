"""Reissue with fakes: a new code sealed for the new message, swapped in whole."""

from __future__ import annotations

import uuid

import pytest

from outbox.application.delivery.errors import DeadLetterRefused, MessageNotFound
from outbox.application.errors import InvalidField
from outbox.application.operator.reissue_dead_letter import ReissueCommand
from outbox.application.staff import IdempotencyKeyReused, RequestInProgress, StaffRequired
from outbox.domain.delivery.dead_letters import Refusal
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import State
from outbox.domain.purposes import Purpose
from tests.unit.application.operator.world import SEALER, OperatorWorld


async def test_the_new_code_is_sealed_for_the_new_message_and_replaces_the_old_one(
    world: OperatorWorld,
):
    actor = world.staff()
    opened = world.open_challenge(code="111111")
    letter = world.dead_letter(subject_id=opened.id)

    receipt = await world.reissue(ReissueCommand(actor=actor, message_id=letter.id))

    copy = world.store.outbox.messages[receipt.message_id]
    assert (State.PENDING, opened.expires_at, letter.id) == (
        copy.state,
        copy.expires_at,
        receipt.dead_letter_id,
    )
    assert copy.sealed_secret is not None
    code = SEALER.open(message_id=copy.id, purpose=Purpose.SIGN_UP, envelope=copy.sealed_secret)
    assert [code] == world.secrets.issued
    new_hash = world.store.challenges[opened.id].code_hash
    assert world.hasher.verify(code, new_hash)
    assert not world.hasher.verify("111111", new_hash)


async def test_the_reissue_is_reported_without_the_code(world: OperatorWorld):
    actor = world.staff()
    letter = world.dead_letter(subject_id=world.open_challenge().id)

    receipt = await world.reissue(ReissueCommand(actor=actor, message_id=letter.id))

    [event] = world.telemetry.named("operator.dead_letter.reissued")
    assert {
        "actor_id": str(actor.identity_id),
        "dead_letter_id": str(letter.id),
        "message_id": str(receipt.message_id),
        "replayed": False,
    } == event.fields  # exactly these: no code, no destination


async def test_a_replay_answers_the_first_receipt_and_keeps_the_first_code(world: OperatorWorld):
    actor = world.staff()
    opened = world.open_challenge()
    letter = world.dead_letter(subject_id=opened.id)
    command = ReissueCommand(actor=actor, message_id=letter.id, idempotency_key="once")
    first = await world.reissue(command)
    hash_after_first = world.store.challenges[opened.id].code_hash

    again = await world.reissue(command)

    assert (first.message_id, True) == (again.message_id, again.replayed)
    assert hash_after_first == world.store.challenges[opened.id].code_hash
    assert 1 == sum(m.state is State.PENDING for m in world.store.outbox.messages.values())


async def test_without_a_key_each_call_is_a_new_request(world: OperatorWorld):
    actor = world.staff()
    letter = world.dead_letter(subject_id=world.open_challenge().id)
    await world.reissue(ReissueCommand(actor=actor, message_id=letter.id))

    with pytest.raises(DeadLetterRefused) as refused:
        await world.reissue(ReissueCommand(actor=actor, message_id=letter.id))

    assert Refusal.NEWER_MESSAGE_EXISTS == refused.value.refusal


@pytest.mark.parametrize(
    ("purpose", "reason", "refusal"),
    [
        (Purpose.INVITATION, FailureClass.REJECTED, Refusal.NOT_REISSUABLE),
        (Purpose.NOTIFICATION, FailureClass.REJECTED, Refusal.NOT_REISSUABLE),
        (Purpose.SIGN_UP, FailureClass.SUPERSEDED_BY_RESEND, Refusal.NOT_A_DELIVERY_FAILURE),
        (Purpose.STEP_UP, FailureClass.CHALLENGE_EXPIRED, Refusal.NOT_A_DELIVERY_FAILURE),
    ],
)
async def test_a_dead_letter_that_cannot_be_fixed_is_refused_before_a_code_is_drawn(
    world: OperatorWorld, purpose, reason, refusal
):
    actor = world.staff()
    subject = world.open_challenge().id if purpose is not Purpose.NOTIFICATION else None
    letter = world.dead_letter(subject_id=subject, purpose=purpose, reason=reason)

    with pytest.raises(DeadLetterRefused) as refused:
        await world.reissue(ReissueCommand(actor=actor, message_id=letter.id))

    assert refusal == refused.value.refusal
    assert [] == world.secrets.issued
    [event] = world.telemetry.named("operator.reissue.refused")
    assert refusal.value == event.fields["refusal"]


async def test_a_closed_challenge_is_refused_by_the_store_and_nothing_changes(
    world: OperatorWorld,
):
    actor = world.staff()
    opened = world.open_challenge()
    world.store.challenges[opened.id] = opened.close(world.now())
    letter = world.dead_letter(subject_id=opened.id)

    with pytest.raises(DeadLetterRefused) as refused:
        await world.reissue(ReissueCommand(actor=actor, message_id=letter.id))

    assert Refusal.CHALLENGE_EXPIRED == refused.value.refusal
    assert opened.code_hash == world.store.challenges[opened.id].code_hash
    assert [] == world.store.audit


async def test_a_caller_who_is_not_staff_is_refused_and_reported(world: OperatorWorld):
    stranger = world.elevated(uuid.uuid4())
    letter = world.dead_letter(subject_id=world.open_challenge().id)

    with pytest.raises(StaffRequired):
        await world.reissue(ReissueCommand(actor=stranger, message_id=letter.id))

    [event] = world.telemetry.named("security.staff_required")
    assert ("warning", "reissue", str(stranger.identity_id)) == (
        event.level,
        event.fields["action"],
        event.fields["actor_id"],
    )
    assert [] == world.secrets.issued


async def test_an_unknown_message_is_not_found(world: OperatorWorld):
    with pytest.raises(MessageNotFound):
        await world.reissue(ReissueCommand(actor=world.staff(), message_id=uuid.uuid4()))


async def test_a_malformed_key_is_refused_before_anything_else(world: OperatorWorld):
    with pytest.raises(InvalidField) as invalid:
        await world.reissue(
            ReissueCommand(actor=world.staff(), message_id=uuid.uuid4(), idempotency_key="a b")
        )
    assert "Idempotency-Key" == invalid.value.field


async def test_a_key_in_use_by_a_running_request_is_in_progress(world: OperatorWorld):
    actor = world.staff()
    letter = world.dead_letter(subject_id=world.open_challenge().id)
    world.store.in_progress.add((actor.identity_id, "busy"))

    with pytest.raises(RequestInProgress):
        await world.reissue(
            ReissueCommand(actor=actor, message_id=letter.id, idempotency_key="busy")
        )


async def test_a_key_reused_for_another_dead_letter_is_refused(world: OperatorWorld):
    actor = world.staff()
    first = world.dead_letter(subject_id=world.open_challenge().id)
    second = world.dead_letter(subject_id=world.open_challenge(identifier="+34612345678").id)
    await world.reissue(ReissueCommand(actor=actor, message_id=first.id, idempotency_key="k"))

    with pytest.raises(IdempotencyKeyReused):
        await world.reissue(ReissueCommand(actor=actor, message_id=second.id, idempotency_key="k"))
