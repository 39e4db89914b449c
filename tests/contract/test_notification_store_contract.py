"""The notifications ports behave alike in memory and in PostgreSQL: the recipient directory,
the snapshot (consent applied when taken, once per intent and channel, its message enqueued
with it), consent, and the reader."""

from __future__ import annotations

from collections.abc import AsyncIterator
from uuid import UUID, uuid4

import psycopg
import pytest

from outbox.application.errors import InvalidRequest
from outbox.application.notifications.ports import TakenSnapshot
from outbox.domain.channels import Channel
from outbox.domain.notifications.catalogue import ACCOUNT_WELCOME
from outbox.domain.notifications.snapshots import (
    Decision,
    Intent,
    IntentSource,
    PlannedDelivery,
    plan,
)
from tests.contract.notification_harness import (
    MemoryNotificationHarness,
    NotificationHarness,
    postgres_notification_harness,
)

ALICE = "alice@example.com"
PHONE = "+34612345678"


@pytest.fixture
async def postgres_harness(database_url: str) -> AsyncIterator[NotificationHarness]:
    """The adapters on the contract suite's shared database, their tables emptied first."""
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        await conn.execute(
            "TRUNCATE notifications.snapshots, notifications.intents,"
            " notifications.consent_opt_outs, identity.identities CASCADE"
        )
    async for found in postgres_notification_harness(database_url):
        yield found


@pytest.fixture(params=["memory", pytest.param("postgres", marks=pytest.mark.integration)])
def harness(request: pytest.FixtureRequest) -> NotificationHarness:
    """The ports under test: the fakes, or the PostgreSQL adapters."""
    if request.param == "memory":
        return MemoryNotificationHarness()
    found: NotificationHarness = request.getfixturevalue("postgres_harness")
    return found


def welcome(recipient_id: UUID, key: str = "identity.account_verified:1") -> Intent:
    return Intent(
        key=key,
        category="account.welcome",
        recipient_id=recipient_id,
        variables={"first_name": "Alice"},
    )


async def planned(harness: NotificationHarness, intent: Intent) -> tuple[PlannedDelivery, ...]:
    async with harness.scope() as scope:
        recipient = await scope.recipients.resolve(intent.recipient_id)
    assert recipient is not None
    return plan(intent, ACCOUNT_WELCOME, recipient, ids=[uuid4(), uuid4()])


async def take(
    harness: NotificationHarness, intent: Intent, delivery: PlannedDelivery
) -> TakenSnapshot:
    async with harness.scope() as scope:
        return await scope.notifications.take_snapshot(intent, delivery, intent_id=uuid4())


async def test_the_directory_answers_verified_addresses_emails_first_and_the_locale(
    harness: NotificationHarness,
) -> None:
    who, nobody = uuid4(), uuid4()
    await harness.add_recipient(who, [(Channel.SMS, PHONE), (Channel.EMAIL, ALICE)], "es")

    async with harness.scope() as scope:
        found = await scope.recipients.resolve(who)
        missing = await scope.recipients.resolve(nobody)

    assert found is not None
    assert missing is None
    assert [(Channel.EMAIL, ALICE), (Channel.SMS, PHONE)] == [
        (a.channel, a.value) for a in found.addresses
    ]
    assert "es" == found.preferred_locale


async def test_a_snapshot_that_sends_enqueues_its_notification_message_with_it(
    harness: NotificationHarness,
) -> None:
    who = uuid4()
    await harness.add_recipient(who, [(Channel.EMAIL, ALICE)], "es")
    intent = welcome(who)
    [email] = await planned(harness, intent)

    taken = await take(harness, intent, email)

    assert (email.snapshot_id, Decision.SEND, True) == (
        taken.snapshot_id,
        taken.decision,
        taken.created,
    )
    assert (
        "notification",
        "email",
        ALICE,
        None,
        "account_welcome",
        "es",
        {"first_name": "Alice"},
        "pending",
    ) == await harness.message(email.snapshot_id)
    view = await harness.reader.find(taken.intent_id)
    assert view is not None
    [snapshot] = view.snapshots
    assert (
        taken.intent_id,
        intent.key,
        "account.welcome",
        who,
        IntentSource.EVENT,
        Channel.EMAIL,
        "a***@example.com",
        "account_welcome",
        "es",
        {"first_name": "Alice"},
        Decision.SEND,
    ) == (
        snapshot.intent_id,
        snapshot.intent_key,
        snapshot.category,
        snapshot.recipient_id,
        snapshot.source,
        snapshot.channel,
        snapshot.masked_destination,
        snapshot.template,
        snapshot.locale,
        dict(snapshot.variables),
        snapshot.decision,
    )
    assert ("pending",) == view.message_states
    assert view == await harness.reader.find(email.snapshot_id)


async def test_taking_it_again_answers_the_first_and_enqueues_nothing(
    harness: NotificationHarness,
) -> None:
    who = uuid4()
    await harness.add_recipient(who, [(Channel.EMAIL, ALICE)], None)
    intent = welcome(who)
    [first_plan] = await planned(harness, intent)
    first = await take(harness, intent, first_plan)
    [second_plan] = await planned(harness, intent)

    again = await take(harness, intent, second_plan)

    assert (first.snapshot_id, first.intent_id, False) == (
        again.snapshot_id,
        again.intent_id,
        again.created,
    )
    assert await harness.message(second_plan.snapshot_id) is None
    view = await harness.reader.find(first.intent_id)
    assert view is not None
    assert 1 == len(view.snapshots)


async def test_an_opt_out_suppresses_the_channel_and_the_snapshot_records_it(
    harness: NotificationHarness,
) -> None:
    who = uuid4()
    await harness.add_recipient(who, [(Channel.EMAIL, ALICE), (Channel.SMS, PHONE)], None)
    assert 1 == await harness.consent.opt_out(who, "account.welcome", [Channel.EMAIL])
    intent = welcome(who)
    email, sms = await planned(harness, intent)

    suppressed = await take(harness, intent, email)
    sent = await take(harness, intent, sms)

    assert (Decision.SUPPRESSED_BY_CONSENT, None) == (suppressed.decision, suppressed.message_id)
    assert await harness.message(email.snapshot_id) is None
    assert Decision.SEND is sent.decision
    assert suppressed.intent_id == sent.intent_id
    view = await harness.reader.find(sent.intent_id)
    assert view is not None
    assert [("email", "suppressed_by_consent", None), ("sms", "send", "pending")] == [
        (s.channel.value, s.decision.value, state)
        for s, state in zip(view.snapshots, view.message_states, strict=True)
    ]


async def test_consent_is_per_recipient_category_and_channel(harness: NotificationHarness) -> None:
    who, other = uuid4(), uuid4()
    assert 2 == await harness.consent.opt_out(who, "account.welcome", [])
    assert 0 == await harness.consent.opt_out(who, "account.welcome", [Channel.SMS])
    assert 1 == await harness.consent.opt_out(other, "account.welcome", [Channel.SMS])
    assert [("account.welcome", Channel.EMAIL), ("account.welcome", Channel.SMS)] == [
        (o.category, o.channel) for o in await harness.consent.opt_outs(who)
    ]
    assert 1 == await harness.consent.opt_in(who, "account.welcome", [Channel.EMAIL])
    assert [Channel.SMS] == [o.channel for o in await harness.consent.opt_outs(who)]
    assert 1 == await harness.consent.opt_in(who, "account.welcome", [])
    assert [] == list(await harness.consent.opt_outs(who))
    assert [other] == [o.recipient_id for o in await harness.consent.opt_outs(other)]


async def test_unknown_categories_and_channels_it_does_not_offer_are_refused(
    harness: NotificationHarness,
) -> None:
    who = uuid4()
    await harness.add_recipient(who, [(Channel.EMAIL, ALICE)], None)
    intent = welcome(who)
    [email] = await planned(harness, intent)
    with pytest.raises(InvalidRequest, match="category"):
        await take(harness, welcome_in(who, "shop.order_shipped"), email)
    with pytest.raises(InvalidRequest, match="channel"):
        await take(
            harness,
            intent,
            PlannedDelivery(
                snapshot_id=uuid4(),
                channel=Channel.WHATSAPP,
                destination=PHONE,
                masked_destination="+34***78",
                template="account_welcome",
                locale="en",
                variables={},
            ),
        )
    with pytest.raises(InvalidRequest, match="category"):
        await harness.consent.opt_out(who, "shop.order_shipped", [])
    with pytest.raises(InvalidRequest, match="channels"):
        await harness.consent.opt_out(who, "account.welcome", [Channel.WHATSAPP])
    assert await harness.message(email.snapshot_id) is None
    assert await harness.reader.find(uuid4()) is None


def welcome_in(recipient_id: UUID, category: str) -> Intent:
    return Intent(key="other:1", category=category, recipient_id=recipient_id)
