"""The catalogue's categories: their rules, and the locale a recipient is written to."""

from __future__ import annotations

import pytest

from outbox.domain.channels import Channel
from outbox.domain.notifications.catalogue import (
    ACCOUNT_WELCOME,
    CATALOGUE,
    Catalogue,
    Category,
    InvalidCategory,
    UnknownCategory,
)


def category(**changes: object) -> Category:
    fields: dict[str, object] = {
        "code": "shop.order_shipped",
        "channels": (Channel.EMAIL,),
        "template": "order_shipped",
        "locales": frozenset({"en", "es", "pt-BR"}),
        "fallback_locale": "en",
    }
    fields.update(changes)
    return Category(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("preferred", "locale"),
    [
        ("es", "es"),
        ("es-MX", "es"),
        ("ES_mx", "es"),
        ("pt-BR", "pt-BR"),
        ("pt_br", "pt-BR"),
        ("pt", "en"),
        ("fr", "en"),
        (None, "en"),
        ("", "en"),
        ("../../etc", "en"),
    ],
)
def test_a_recipient_is_written_to_in_the_closest_locale_the_category_has(
    preferred: str | None, locale: str
) -> None:
    assert locale == category().locale_for(preferred)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"code": "Shop.Order"}, "code"),
        ({"channels": ()}, "channels"),
        ({"template": "../x"}, "template"),
        ({"fallback_locale": "fr"}, "fallback_locale"),
    ],
)
def test_a_category_that_breaks_a_rule_is_refused_naming_the_field(
    changes: dict[str, object], field: str
) -> None:
    with pytest.raises(InvalidCategory, match=field):
        category(**changes)


def test_the_catalogue_finds_categories_by_code_and_refuses_unknown_ones() -> None:
    assert ACCOUNT_WELCOME is CATALOGUE.category("account.welcome")
    assert "account.welcome" in CATALOGUE
    with pytest.raises(UnknownCategory, match="no category"):
        CATALOGUE.category("account.farewell")


def test_two_categories_may_not_share_a_code() -> None:
    with pytest.raises(InvalidCategory, match="declared twice"):
        Catalogue([category(), category(template="other")])


def test_the_welcome_is_written_in_english_and_spanish_for_email_and_sms() -> None:
    assert (Channel.EMAIL, Channel.SMS) == ACCOUNT_WELCOME.channels
    assert frozenset({"en", "es"}) == ACCOUNT_WELCOME.locales
    assert [ACCOUNT_WELCOME] == list(CATALOGUE)
