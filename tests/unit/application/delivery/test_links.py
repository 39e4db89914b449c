"""Links carry their token in the fragment, and only link purposes have a base."""

from __future__ import annotations

from outbox.application.delivery.links import LinkBases, link_with_token
from outbox.domain.purposes import Purpose


def test_the_token_goes_in_the_fragment() -> None:
    assert "https://app.example/join#token=abc" == link_with_token(
        "https://app.example/join", "abc"
    )


def test_each_link_purpose_has_its_own_base() -> None:
    bases = LinkBases(invitation="https://i.example/join", magic_link="https://m.example/in")
    assert "https://i.example/join" == bases.base_for(Purpose.INVITATION)
    assert "https://m.example/in" == bases.base_for(Purpose.MAGIC_LINK)


def test_code_purposes_have_no_link_base() -> None:
    bases = LinkBases(invitation="https://i.example/join", magic_link="https://m.example/in")
    assert bases.base_for(Purpose.SIGN_UP) is None
    assert bases.base_for(Purpose.NOTIFICATION) is None


def test_an_unconfigured_base_is_none() -> None:
    assert LinkBases().base_for(Purpose.INVITATION) is None
