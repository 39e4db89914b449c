"""An SMTP reply kept for operators: the enhanced status code and the text, with nothing in it
that is an address or could be a secret, whatever the server put there."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from outbox.adapters.providers.smtp.replies import reply_detail
from outbox.domain.delivery.failures import MAX_DETAIL

DESTINATION = "alice.liddell@example.com"


def test_a_multi_line_reply_keeps_one_enhanced_code_and_joins_its_lines():
    reply = (
        "5.1.1 The email account that you tried to reach does not exist.\n"
        "5.1.1 Please check https://support.google.com/mail/?p=NoSuchUser\n"
        "5.1.1 d2-20020a05600c4ec200b003f7f2ee6f2esi12 - gsmtp"
    )

    assert (
        "5.1.1 The email account that you tried to reach does not exist."
        " Please check [url] [token] - gsmtp"
    ) == reply_detail(reply, destination=DESTINATION)


def test_the_destination_goes_even_without_its_domain_and_in_another_case():
    reply = "5.1.1 user ALICE.LIDDELL unknown; <alice.liddell@example.com> rejected"

    assert "5.1.1 user [address] unknown; [address] rejected" == reply_detail(
        reply, destination=DESTINATION
    )


def test_a_reply_without_an_enhanced_code_is_kept_as_text():
    assert "Service not available, closing" == reply_detail(
        "Service not available, closing", destination=DESTINATION
    )


def test_addresses_numbers_and_control_characters_are_taken_out():
    reply = "4.7.0 from 192.0.2.1 [2001:db8::1] call +34 612 345 678 code 493817\x1b[31m"

    assert "4.7.0 from [ip] [[ip]] call [number] code [number] [31m" == reply_detail(
        reply, destination=DESTINATION
    )


_SECRET = st.from_regex(r"[0-9]{6}", fullmatch=True)
_ADDRESS = st.emails()
_WORDS = st.text(alphabet=st.characters(codec="utf-8"), max_size=300)


@given(before=_WORDS, secret=_SECRET, address=_ADDRESS, after=_WORDS)
def test_no_code_and_no_address_survives_whatever_surrounds_them(
    before: str, secret: str, address: str, after: str
) -> None:
    reply = f"5.7.1 {before} {secret} {address} {after}"

    detail = reply_detail(reply, destination=DESTINATION)

    assert len(detail) <= MAX_DETAIL
    assert "@" not in detail
    assert re.search(r"\d{4}", detail.removeprefix("5.7.1")) is None
    assert detail.isprintable()
