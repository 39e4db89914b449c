"""Requesting a notification over the fakes: the snapshot decides once, consent is honoured
and recorded, and asking again enqueues nothing."""

from __future__ import annotations

from uuid import UUID

import attrs
import pytest

from outbox.application.errors import InvalidRequest
from outbox.application.notifications.errors import UnknownRecipient
from outbox.domain.channels import Channel
from outbox.domain.delivery.messages import State
from outbox.domain.notifications.catalogue import UnknownCategory
from outbox.domain.notifications.snapshots import Decision, Intent, IntentSource
from outbox.domain.purposes import Purpose
from tests.unit.application.notifications.world import ALICE, BOB, NotificationWorld

KEY = "identity.account_verified:0192"


def welcome(recipient: UUID = ALICE, key: str = KEY) -> Intent:
    return Intent(key=key, category="account.welcome", recipient_id=recipient)


async def test_an_intent_becomes_one_notification_message_per_channel_in_the_locale() -> None:
    world = NotificationWorld()
    world.add(
        ALICE, (Channel.EMAIL, "alice@example.com"), (Channel.SMS, "+34612345678"), locale="es"
    )

    email, sms = await world.request(world.scope, welcome())

    assert (True, True) == (email.created, sms.created)
    assert {Decision.SEND} == {email.decision, sms.decision}
    messages = world.messages()
    assert [email.snapshot_id, sms.snapshot_id] == [m.id for m in messages]
    for message, channel in zip(messages, (Channel.EMAIL, Channel.SMS), strict=True):
        assert (Purpose.NOTIFICATION, channel, "account_welcome", "es", None) == (
            message.purpose,
            message.channel,
            message.template,
            message.locale,
            message.subject_id,
        )
        assert State.PENDING is message.state
    assert ["alice@example.com", "+34612345678"] == [m.destination for m in messages]


async def test_asking_again_answers_the_first_snapshots_and_enqueues_nothing() -> None:
    world = NotificationWorld()
    world.add(ALICE, (Channel.EMAIL, "alice@example.com"))
    [first] = await world.request(world.scope, welcome())
    world.add(ALICE, (Channel.EMAIL, "alice@example.com"), locale="es")  # a later preference

    [again] = await world.request(world.scope, welcome())

    assert attrs.evolve(first, created=False) == again
    assert 1 == len(world.messages())
    view = await world.reader.find(first.snapshot_id)
    assert view is not None
    assert ["en"] == [s.locale for s in view.snapshots]  # frozen: never re-derived


async def test_an_opted_out_channel_is_suppressed_and_the_snapshot_says_why() -> None:
    world = NotificationWorld()
    world.add(ALICE, (Channel.EMAIL, "alice@example.com"), (Channel.SMS, "+34612345678"))
    assert 1 == await world.consent.opt_out(ALICE, "account.welcome", [Channel.EMAIL])

    email, sms = await world.request(world.scope, welcome())

    assert (Decision.SUPPRESSED_BY_CONSENT, None) == (email.decision, email.message_id)
    assert Decision.SEND is sms.decision
    assert [sms.snapshot_id] == [m.id for m in world.messages()]
    view = await world.reader.find(email.intent_id)
    assert view is not None
    assert [("email", "suppressed_by_consent", None), ("sms", "send", "pending")] == [
        (s.channel.value, s.decision.value, state)
        for s, state in zip(view.snapshots, view.message_states, strict=True)
    ]
    assert "a***@example.com" == view.snapshots[0].masked_destination


async def test_consent_given_back_after_the_snapshot_does_not_change_it() -> None:
    world = NotificationWorld()
    world.add(BOB, (Channel.EMAIL, "bob@example.com"))
    await world.consent.opt_out(BOB, "account.welcome")
    [suppressed] = await world.request(world.scope, welcome(BOB))

    assert 2 == await world.consent.opt_in(BOB, "account.welcome")
    [again] = await world.request(world.scope, welcome(BOB))
    [later] = await world.request(world.scope, welcome(BOB, key="staff:second"))

    assert Decision.SUPPRESSED_BY_CONSENT is again.decision is suppressed.decision
    assert Decision.SEND is later.decision
    assert [later.snapshot_id] == [m.id for m in world.messages()]


async def test_unknown_categories_and_recipients_are_refused() -> None:
    world = NotificationWorld()
    with pytest.raises(UnknownRecipient):
        await world.request(world.scope, welcome())
    world.add(ALICE)  # no address at all: no recipient either
    with pytest.raises(UnknownRecipient):
        await world.request(world.scope, welcome())
    with pytest.raises(UnknownCategory):
        await world.request(
            world.scope, Intent(key=KEY, category="shop.order_shipped", recipient_id=ALICE)
        )
    assert [] == world.messages()


async def test_a_recipient_without_an_offered_channel_gets_no_snapshot() -> None:
    world = NotificationWorld()
    world.add(ALICE, (Channel.WHATSAPP, "+34612345678"))
    assert () == await world.request(world.scope, welcome())
    assert [] == world.messages()


async def test_consent_changes_are_checked_against_the_catalogue() -> None:
    world = NotificationWorld()
    with pytest.raises(InvalidRequest, match="whatsapp"):
        await world.consent.opt_out(ALICE, "account.welcome", [Channel.WHATSAPP])
    with pytest.raises(UnknownCategory):
        await world.consent.opt_out(ALICE, "shop.order_shipped")
    assert 2 == await world.consent.opt_out(ALICE, "account.welcome")
    assert 0 == await world.consent.opt_out(ALICE, "account.welcome", [Channel.SMS])
    assert [("account.welcome", Channel.EMAIL), ("account.welcome", Channel.SMS)] == [
        (o.category, o.channel) for o in await world.consent.opt_outs(ALICE)
    ]
    assert 1 == await world.consent.opt_in(ALICE, "account.welcome", [Channel.SMS])
    assert [Channel.EMAIL] == [o.channel for o in await world.consent.opt_outs(ALICE)]


async def test_a_staff_intent_is_recorded_as_such() -> None:
    world = NotificationWorld()
    world.add(ALICE, (Channel.EMAIL, "alice@example.com"))
    intent = Intent(
        key="staff:1",
        category="account.welcome",
        recipient_id=ALICE,
        source=IntentSource.STAFF,
        variables={"first_name": "Alice"},
    )
    [taken] = await world.request(world.scope, intent)
    view = await world.reader.find(taken.intent_id)
    assert view is not None
    [snapshot] = view.snapshots
    assert (IntentSource.STAFF, {"first_name": "Alice"}) == (
        snapshot.source,
        dict(snapshot.variables),
    )
    assert {"first_name": "Alice"} == dict(world.messages()[0].params)
