"""Destinations: what a valid email or E.164 number is, normalisation and masking."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from outbox.domain.channels import Channel
from outbox.domain.destinations import channel_of, is_e164, is_email, mask, normalize
from outbox.domain.errors import InvalidDestination

# --- validity --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "alice@example.com",
        "a@b.co",
        "Alice.O'Neil+tag@Sub.Example.ORG",
        "x-y_z@xn--bcher-kva.example",
        f"{'l' * 64}@example.com",
    ],
)
def test_plausible_email_addresses_are_accepted(value: str) -> None:
    assert is_email(value)


@pytest.mark.parametrize(
    "value",
    [
        "",
        "alice",
        "alice@",
        "@example.com",
        "alice@example",  # no dot in the domain
        "alice@@example.com",
        "alice@exa mple.com",
        " alice@example.com",
        "alice@example.com\n",
        "alice@-example.com",
        "alice@example-.com",
        "alice@example..com",
        "al ice@example.com",
        "álice@example.com",
        "alice@exämple.com",
        f"{'l' * 65}@example.com",
        f"alice@{'a' * 64}.com",
        f"{'l' * 64}@{'d' * 63}.{'d' * 63}.{'d' * 61}.com",  # 255 characters
    ],
)
def test_implausible_email_addresses_are_refused(value: str) -> None:
    assert not is_email(value)


@pytest.mark.parametrize("value", ["+1234567", "+34612345678", "+123456789012345"])
def test_e164_numbers_are_accepted(value: str) -> None:
    assert is_e164(value)


@pytest.mark.parametrize(
    "value",
    [
        "",
        "34612345678",  # no plus
        "+0612345678",  # country codes never start with 0
        "+123456",  # 6 digits
        "+1234567890123456",  # 16 digits
        "+34 612 345 678",
        "+34-612345678",
        "+34612345678\n",
        "+\u0663\u0664\u0666\u0661\u0662\u0663\u0664\u0665\u0666",  # Arabic-Indic digits
        "+\uff13\uff14\uff16\uff11\uff12\uff13\uff14\uff15",  # full-width digits
    ],
)
def test_non_e164_numbers_are_refused(value: str) -> None:
    assert not is_e164(value)


# --- normalize and channel_of ----------------------------------------------------------


def test_normalize_email_lowercases_the_whole_address() -> None:
    assert "alice.smith@example.com" == normalize(Channel.EMAIL, "  Alice.Smith@EXAMPLE.Com ")


ADDRESS = "alice.smith@example.com"


@given(st.lists(st.booleans(), min_size=len(ADDRESS), max_size=len(ADDRESS)))
def test_every_letter_case_of_an_address_normalizes_to_one_spelling(upper: list[bool]) -> None:
    spelled = "".join(c.upper() if u else c for c, u in zip(ADDRESS, upper, strict=True))

    assert ADDRESS == normalize(Channel.EMAIL, spelled)


@pytest.mark.parametrize("channel", [Channel.SMS, Channel.WHATSAPP])
def test_normalize_phone_keeps_an_e164_number(channel: Channel) -> None:
    assert "+34612345678" == normalize(channel, " +34612345678 ")


@pytest.mark.parametrize(
    ("channel", "value"),
    [
        (Channel.EMAIL, "+34612345678"),
        (Channel.EMAIL, "not-an-address"),
        (Channel.SMS, "alice@example.com"),
        (Channel.SMS, "0612345678"),
        (Channel.WHATSAPP, "+34 612 345 678"),
    ],
)
def test_normalize_refuses_a_destination_invalid_for_its_channel(
    channel: Channel, value: str
) -> None:
    with pytest.raises(InvalidDestination):
        normalize(channel, value)


def test_channel_of_an_email_is_email_and_of_a_phone_is_sms() -> None:
    assert Channel.EMAIL == channel_of("alice@example.com")
    assert Channel.SMS == channel_of("+34612345678")


def test_channel_of_anything_else_is_refused() -> None:
    with pytest.raises(InvalidDestination):
        channel_of("alice")


# --- mask ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "masked"),
    [
        ("alice@example.com", "a***@example.com"),
        ("a@example.com", "a***@example.com"),
        ("Bob.Smith@EXAMPLE.com", "B***@example.com"),
        ("+34612345678", "+34***78"),
        ("+1234567", "+12***67"),
    ],
)
def test_mask_keeps_only_a_hint_of_a_valid_destination(value: str, masked: str) -> None:
    assert masked == mask(value)


@pytest.mark.parametrize(
    "value",
    [
        "",
        "alice",
        "alice@example",
        " alice@example.com",
        "alice@example.com\n",
        "+34 612 345 678",
        "0612345678",
        "secret-token-7f3a",
        "\u0661\u0662\u0663",
        "x" * 500,
    ],
)
def test_mask_hides_a_malformed_value_completely(value: str) -> None:
    assert "***" == mask(value)


emails = st.emails().filter(is_email)
phones = st.from_regex(r"\+[1-9][0-9]{6,14}", fullmatch=True)


@settings(max_examples=100)
@given(value=emails)
def test_a_masked_email_shows_only_the_first_character_and_the_domain(value: str) -> None:
    local, _, host = value.rpartition("@")
    masked = mask(value)

    assert value not in masked
    assert f"{local[0]}***@{host.lower()}" == masked


@settings(max_examples=100)
@given(value=phones)
def test_a_masked_phone_hides_every_digit_but_the_first_two_and_last_two(value: str) -> None:
    masked = mask(value)

    assert value not in masked
    assert f"{value[:3]}***{value[-2:]}" == masked
    assert 4 == sum(ch.isdigit() for ch in masked)


@settings(max_examples=300)
@given(value=st.text())
def test_mask_never_echoes_what_it_cannot_recognise(value: str) -> None:
    masked = mask(value)

    if is_email(value) or is_e164(value):
        assert value not in masked
    else:
        assert "***" == masked
