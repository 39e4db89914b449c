"""The identity.account_notifications consumer's handler: an account_verified event becomes
one account.welcome intent keyed by the event, whatever number of times it is delivered."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

import attrs
import pytest

from outbox.application.events.consumer_handlers import Reject
from outbox.application.identity.account_notification_consumer import (
    CONSUMER,
    EVENT_TYPES,
    SendAccountNotifications,
)
from outbox.domain.channels import Channel
from outbox.domain.identity.account_events import account_verified, sessions_revoked
from tests.unit.application.identity.world import delivered_event
from tests.unit.application.notifications.world import ALICE, NotificationWorld

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
EVENT_ID = UUID(int=99)


def verified(identity_id: UUID = ALICE):  # type: ignore[no-untyped-def]
    return account_verified(
        identity_id=identity_id, challenge_id=UUID(int=5), channel=Channel.EMAIL, now=NOW
    )


async def test_a_verified_account_gets_its_welcome_once_however_often_delivered() -> None:
    world = NotificationWorld()
    world.add(ALICE, (Channel.EMAIL, "alice@example.com"), locale="es")
    handle = SendAccountNotifications(request=world.request)
    event = delivered_event(EVENT_ID, verified())

    [first] = await handle(world.scope, event)
    [again] = await handle(world.scope, attrs.evolve(event, replay_round=1, attempt=2))

    assert (True, False, first.snapshot_id) == (first.created, again.created, again.snapshot_id)
    [message] = world.messages()
    assert ("account_welcome", "es", "alice@example.com") == (
        message.template,
        message.locale,
        message.destination,
    )
    assert {f"identity.account_verified:{EVENT_ID}"} == {k for k, _ in world.tables.intents}
    assert ("identity.account_notifications", ("identity.account_verified",)) == (
        CONSUMER,
        EVENT_TYPES,
    )


async def test_an_account_without_a_verified_identifier_is_not_welcomed() -> None:
    world = NotificationWorld()
    handle = SendAccountNotifications(request=world.request)
    assert () == await handle(world.scope, delivered_event(EVENT_ID, verified()))
    assert [] == world.messages()


async def test_another_event_or_an_unreadable_one_is_rejected() -> None:
    world = NotificationWorld()
    handle = SendAccountNotifications(request=world.request)
    other = sessions_revoked(
        identity_id=ALICE, revocation_id=UUID(int=6), session_id=UUID(int=7), count=1, now=NOW
    )
    with pytest.raises(Reject, match="unreadable_account_event"):
        await handle(world.scope, delivered_event(EVENT_ID, other))
    broken = attrs.evolve(delivered_event(EVENT_ID, verified()), payload={})
    with pytest.raises(Reject, match="unreadable_account_event"):
        await handle(world.scope, broken)
