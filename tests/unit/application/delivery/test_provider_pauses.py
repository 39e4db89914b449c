"""Operator pauses as the worker honours them: a paused provider's messages go back to pending
without spending an attempt, other providers send, and a resume lets them go."""

from __future__ import annotations

from datetime import timedelta

import attrs

from outbox.application.delivery.provider_pauses import ProviderPauseBoard
from outbox.domain.channels import Channel
from outbox.domain.delivery.messages import State
from tests.fakes.paused_providers import InMemoryPausedProviders
from tests.unit.application.delivery.test_dispatch_due_messages import PHONE, Harness


def _paused(names: set[str]) -> tuple[Harness, InMemoryPausedProviders]:
    harness = Harness()
    source = InMemoryPausedProviders(names=names)
    board = ProviderPauseBoard(source)
    object.__setattr__(harness, "dispatch", attrs.evolve(harness.dispatch, pauses=board))
    return harness, source


async def test_a_paused_providers_message_waits_without_spending_an_attempt() -> None:
    h, _ = _paused({"ses"})
    email = await h.enqueue()
    sms = await h.enqueue(channel=Channel.SMS, destination=PHONE)

    await h.dispatch()

    assert [] == h.email.sent
    assert [sms] == [d.message_id for d in h.sms.sent]
    waiting = h.message(email)
    assert (State.PENDING, 0) == (waiting.state, waiting.attempts)
    assert h.clock.now() + timedelta(seconds=10) == waiting.available_at


async def test_a_resumed_provider_sends_once_the_pause_is_read_again() -> None:
    h, source = _paused({"ses"})
    email = await h.enqueue()
    await h.dispatch()
    source.names.clear()

    h.clock.advance(timedelta(seconds=11))
    await h.dispatch()

    assert [email] == [d.message_id for d in h.email.sent]
    assert State.PUBLISHED is h.message(email).state


async def test_the_pauses_are_read_at_most_once_per_refresh() -> None:
    h, source = _paused(set())
    for _ in range(3):
        await h.enqueue()
        await h.dispatch()

    assert 1 == source.reads
