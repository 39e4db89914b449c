"""Intents and the planning of their snapshots: one per offered channel the recipient has an
address on, in the recipient's locale, never with a secret among the variables."""

from __future__ import annotations

from uuid import UUID, uuid4

import pytest

from outbox.domain.channels import Channel
from outbox.domain.notifications.catalogue import ACCOUNT_WELCOME
from outbox.domain.notifications.snapshots import (
    Address,
    Decision,
    Intent,
    InvalidIntent,
    Recipient,
    decide,
    plan,
)

RECIPIENT = UUID(int=7)
IDS = [UUID(int=100 + n) for n in range(3)]


def intent(**changes: object) -> Intent:
    fields: dict[str, object] = {
        "key": "identity.account_verified:1",
        "category": "account.welcome",
        "recipient_id": RECIPIENT,
    }
    fields.update(changes)
    return Intent(**fields)  # type: ignore[arg-type]


def recipient(*addresses: tuple[Channel, str], locale: str | None = None) -> Recipient:
    return Recipient(
        id=RECIPIENT,
        addresses=tuple(Address(channel=c, value=v) for c, v in addresses),
        preferred_locale=locale,
    )


def test_one_delivery_per_channel_on_the_first_address_in_the_recipient_s_locale() -> None:
    who = recipient(
        (Channel.EMAIL, "Alice@Example.com"),
        (Channel.EMAIL, "second@example.com"),
        (Channel.SMS, "+34612345678"),
        locale="es-MX",
    )

    email, sms = plan(intent(), ACCOUNT_WELCOME, who, ids=IDS)

    assert (IDS[0], Channel.EMAIL, "alice@example.com", "a***@example.com") == (
        email.snapshot_id,
        email.channel,
        email.destination,
        email.masked_destination,
    )
    assert (IDS[1], Channel.SMS, "+34***78") == (
        sms.snapshot_id,
        sms.channel,
        sms.masked_destination,
    )
    assert {"account_welcome"} == {email.template, sms.template}
    assert {"es"} == {email.locale, sms.locale}
    assert "alice@example.com" not in repr(email)


def test_a_channel_the_category_does_not_offer_gets_nothing() -> None:
    who = recipient((Channel.WHATSAPP, "+34612345678"), locale="fr")
    assert () == plan(intent(), ACCOUNT_WELCOME, who, ids=IDS)


def test_an_unknown_preference_falls_back_to_the_category_s_locale() -> None:
    [email] = plan(intent(), ACCOUNT_WELCOME, recipient((Channel.EMAIL, "a@example.com")), ids=IDS)
    assert "en" == email.locale


def test_a_plan_refuses_another_category_or_recipient() -> None:
    who = recipient((Channel.EMAIL, "a@example.com"))
    with pytest.raises(InvalidIntent, match="category"):
        plan(intent(category="shop.order_shipped"), ACCOUNT_WELCOME, who, ids=IDS)
    with pytest.raises(InvalidIntent, match="recipient_id"):
        plan(intent(recipient_id=uuid4()), ACCOUNT_WELCOME, who, ids=IDS)


@pytest.mark.parametrize(
    "variables",
    [
        {"code": "123456"},
        {"link": "https://x"},
        {"reset_token": "t"},
        {"password": "p"},
        {"api_secret": "s"},
        {"Name": "x"},
        {"name": "x" * 501},
        {"count": 3},
        {f"v{n}": "x" for n in range(21)},
        {"first_name": "Verify at https://evil.example/verify"},
        {"first_name": "see www.evil.example"},
        {"first_name": "пример.рф"},
        {"first_name": "evil。com"},
    ],
)
def test_an_intent_carries_no_secret_and_only_short_named_text(
    variables: dict[str, object],
) -> None:
    with pytest.raises(InvalidIntent, match="variables"):
        intent(variables=variables)


@pytest.mark.parametrize("name", ["Ana María", "J. R. R. Tolkien", "O'Brien-Smith"])
def test_a_name_with_dots_or_accents_is_no_link(name: str) -> None:
    assert name == intent(variables={"first_name": name}).variables["first_name"]


def test_a_category_takes_only_the_variables_it_names() -> None:
    with pytest.raises(InvalidIntent, match="carries no variable 'reset_url'"):
        plan(
            intent(variables={"first_name": "Alice", "reset_url": "x"}),
            ACCOUNT_WELCOME,
            recipient((Channel.EMAIL, "alice@example.com")),
            ids=IDS,
        )


@pytest.mark.parametrize("key", ["", "with space", "x" * 201, "semi;colon"])
def test_an_intent_key_is_a_short_word(key: str) -> None:
    with pytest.raises(InvalidIntent, match="key"):
        intent(key=key)


def test_an_intent_s_variables_are_frozen() -> None:
    source = {"first_name": "Alice"}
    made = intent(variables=source)
    source["first_name"] = "Mallory"
    assert "Alice" == made.variables["first_name"]
    with pytest.raises(TypeError):
        made.variables["first_name"] = "Mallory"  # type: ignore[index]


def test_an_opt_out_suppresses_and_records_why() -> None:
    assert Decision.SUPPRESSED_BY_CONSENT is decide(opted_out=True)
    assert "suppressed_by_consent" == decide(opted_out=True).value
    assert Decision.SEND is decide(opted_out=False)
