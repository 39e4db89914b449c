"""Locale tags and their fallback chains."""

from __future__ import annotations

import pytest

from outbox.adapters.templates.locales import fallback_chain, normalize


@pytest.mark.parametrize(
    ("tag", "canonical"),
    [
        ("es", "es"),
        ("ES", "es"),
        ("es_mx", "es-MX"),
        ("es-419", "es-419"),
        ("zh-hant-tw", "zh-Hant-TW"),
        ("  pt-BR ", "pt-BR"),
    ],
)
def test_a_tag_is_put_in_canonical_case(tag: str, canonical: str) -> None:
    assert canonical == normalize(tag)


@pytest.mark.parametrize("tag", ["", "e", "../en", "en/../../etc", "en-", "english-language-x"])
def test_a_malformed_tag_is_refused(tag: str) -> None:
    assert normalize(tag) is None


def test_the_chain_drops_subtags_one_at_a_time_then_ends_with_the_default() -> None:
    assert ("zh-Hant-TW", "zh-Hant", "zh", "en") == fallback_chain("zh_Hant_TW", "en")


def test_the_default_appears_once() -> None:
    assert ("en-GB", "en") == fallback_chain("en-GB", "en")


def test_a_malformed_tag_falls_back_to_the_default_alone() -> None:
    assert ("en",) == fallback_chain("../../etc/passwd", "en")
