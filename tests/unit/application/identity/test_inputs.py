"""Caller input into identifiers: one spelling per mailbox, phone numbers validated into E.164."""

from __future__ import annotations

import pytest

from outbox.application.errors import InvalidField
from outbox.application.identity.inputs import parse_email, parse_identifier
from outbox.application.identity.phone_numbers import PhoneCountry, country_of
from outbox.domain.channels import Channel
from outbox.domain.identity.identifiers import Identifier


def test_an_email_is_lower_cased_as_a_whole() -> None:
    assert Identifier("bob@example.com", Channel.EMAIL) == parse_identifier(" Bob@EXAMPLE.com ")
    assert Identifier("bob@example.com", Channel.EMAIL) == parse_email("BOB@example.com")


@pytest.mark.parametrize("raw", ["+34612345678", "+34 612 34 56 78", "+34 (612) 34-56-78"])
def test_a_phone_number_becomes_e164(raw: str) -> None:
    assert Identifier("+34612345678", Channel.SMS) == parse_identifier(raw)


@pytest.mark.parametrize(
    "raw",
    [
        "612345678",  # no country
        "+99912345678",  # a calling code no country has
        "+3461234",  # too short for Spain
        "+1555",
        "+34612345678x",
        "not an identifier",
        "alice@",
    ],
)
def test_anything_else_is_refused_naming_the_field(raw: str) -> None:
    with pytest.raises(InvalidField) as refused:
        parse_identifier(raw)

    assert "identifier" == refused.value.field


def test_a_number_knows_its_country_and_prefix() -> None:
    assert PhoneCountry(region="ES", prefix="+34") == country_of("+34612345678")
    assert PhoneCountry(region="US", prefix="+1") == country_of("+12015550123")
