"""A reissue or requeue is refused, with nothing changed, when no provider sends the dead
letter's channel, and says which paused provider its copy waits for."""

from __future__ import annotations

import attrs
import pytest

from outbox.application.delivery.copy_routes import ChannelRoutes, CopyRouter, NoProvider
from outbox.application.delivery.operations import RequeueCommand
from outbox.application.delivery.views import MessageSummary
from outbox.application.operator.reissue_dead_letter import ReissueCommand, ReissueDeadLetter
from outbox.application.operator.repair_matching_messages import BulkAction
from outbox.domain.channels import Channel
from outbox.domain.delivery.dead_letters import Refusal
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import State
from outbox.domain.purposes import Purpose
from tests.fakes.paused_providers import InMemoryPausedProviders
from tests.unit.application.operator.world import OperatorWorld, messages_over

EMAIL_NONE = ChannelRoutes({Channel.EMAIL: None})
EMAIL_SMTP = ChannelRoutes({Channel.EMAIL: "smtp"})


def _reissue(world: OperatorWorld, router: CopyRouter) -> ReissueDeadLetter:
    return attrs.evolve(world.reissue, router=router)


async def test_a_code_no_provider_sends_is_refused_and_the_old_code_still_works(
    world: OperatorWorld,
):
    opened = world.open_challenge()
    letter = world.dead_letter(subject_id=opened.id)
    reissue = _reissue(world, CopyRouter(routes=EMAIL_NONE))

    with pytest.raises(NoProvider) as refused:
        await reissue(ReissueCommand(actor=world.staff(), message_id=letter.id))

    assert (Refusal.NO_PROVIDER, Channel.EMAIL) == (refused.value.refusal, refused.value.channel)
    assert opened.code_hash == world.store.challenges[opened.id].code_hash
    assert not any(m.state is State.PENDING for m in world.store.outbox.messages.values())
    [event] = world.telemetry.named("operator.reissue.refused")
    assert "no_provider" == event.fields["refusal"]


async def test_a_code_whose_provider_is_paused_is_reissued_and_says_it_waits(
    world: OperatorWorld,
):
    letter = world.dead_letter(subject_id=world.open_challenge().id)
    pauses = InMemoryPausedProviders(names={"smtp"})
    reissue = _reissue(world, CopyRouter(routes=EMAIL_SMTP, pauses=pauses))

    receipt = await reissue(ReissueCommand(actor=world.staff(), message_id=letter.id))

    assert "smtp" == receipt.waits_for
    assert State.PENDING is world.store.outbox.messages[receipt.message_id].state
    [event] = world.telemetry.named("operator.dead_letter.reissued")
    assert "smtp" == event.fields["waits_for"]


async def test_a_channel_the_settings_do_not_name_is_not_refused(world: OperatorWorld):
    letter = world.dead_letter(subject_id=world.open_challenge().id)
    reissue = _reissue(world, CopyRouter(routes=ChannelRoutes({Channel.SMS: None})))

    receipt = await reissue(ReissueCommand(actor=world.staff(), message_id=letter.id))

    assert receipt.waits_for is None


async def test_a_notification_no_provider_sends_is_not_requeued(world: OperatorWorld):
    letter = world.dead_letter(purpose=Purpose.NOTIFICATION)
    messages = attrs.evolve(messages_over(world.store), router=CopyRouter(routes=EMAIL_NONE))

    with pytest.raises(NoProvider):
        await messages.requeue_dead_letter(
            RequeueCommand(actor=world.staff(), message_id=letter.id)
        )

    assert [letter.id] == list(world.store.outbox.messages)


def test_a_bulk_repair_offers_nothing_on_a_channel_no_provider_sends(world: OperatorWorld):
    letter = world.dead_letter(subject_id=world.open_challenge().id)
    item = MessageSummary(
        id=letter.id,
        purpose=Purpose.SIGN_UP,
        channel=Channel.EMAIL,
        destination="p***@example.com",
        state=State.DEAD_LETTERED,
        attempts=1,
        created_at=world.now(),
        dead_letter_reason=FailureClass.REJECTED,
        provider="smtp",
    )

    assert BulkAction.REISSUE.fits(item, routes=EMAIL_SMTP)
    assert not BulkAction.REISSUE.fits(item, routes=EMAIL_NONE)
