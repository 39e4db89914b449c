"""Requeue with fakes: a copy of a dead notification, reported; refusals reported too."""

from __future__ import annotations

import uuid

import pytest

from outbox.application.delivery.errors import DeadLetterRefused
from outbox.application.delivery.operations import RequeueCommand
from outbox.application.staff import StaffRequired
from outbox.domain.delivery.dead_letters import Refusal
from outbox.domain.delivery.messages import State
from outbox.domain.purposes import Purpose
from tests.unit.application.operator.world import PERSON, OperatorWorld


async def test_a_dead_notification_is_copied_under_a_new_id(world: OperatorWorld):
    actor = world.staff()
    letter = world.dead_letter(purpose=Purpose.NOTIFICATION)

    receipt = await world.requeue(RequeueCommand(actor=actor, message_id=letter.id))

    copy = world.store.outbox.messages[receipt.message_id]
    assert (State.PENDING, PERSON, letter.template, None) == (
        copy.state,
        copy.destination,
        copy.template,
        copy.sealed_secret,
    )
    assert State.DEAD_LETTERED is world.store.outbox.messages[letter.id].state
    [event] = world.telemetry.named("operator.dead_letter.requeued")
    assert str(receipt.message_id) == event.fields["message_id"]


async def test_a_code_message_is_not_requeued(world: OperatorWorld):
    letter = world.dead_letter(subject_id=world.open_challenge().id)

    with pytest.raises(DeadLetterRefused) as refused:
        await world.requeue(RequeueCommand(actor=world.staff(), message_id=letter.id))

    assert Refusal.NOT_REQUEUEABLE == refused.value.refusal
    [event] = world.telemetry.named("operator.requeue.refused")
    assert "not_requeueable" == event.fields["refusal"]


async def test_a_caller_who_is_not_staff_is_refused_and_reported(world: OperatorWorld):
    letter = world.dead_letter(purpose=Purpose.NOTIFICATION)

    with pytest.raises(StaffRequired):
        await world.requeue(
            RequeueCommand(actor=world.elevated(uuid.uuid4()), message_id=letter.id)
        )

    [event] = world.telemetry.named("security.staff_required")
    assert "requeue" == event.fields["action"]
