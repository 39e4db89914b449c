"""Parsing key lines: order, separators, and errors that never show the key material."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from outbox.adapters.crypto.keyring import (
    KEY_ID_PATTERN,
    KeyringError,
    SealKey,
    generate_key,
    key_line,
    new_key_id,
    parse_keyring,
)

FIRST = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"  # bytes 0..31
SECOND = "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8"  # bytes 32..63
SHORT = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHg"  # bytes 0..30


def test_the_first_key_seals_and_every_key_is_loaded() -> None:
    keyring = parse_keyring(f"new:{SECOND},old:{FIRST}")

    assert "new" == keyring.active.key_id
    assert bytes(range(32, 64)) == keyring.active.material
    assert ["new", "old"] == [key.key_id for key in keyring.keys]


def test_a_key_file_may_use_lines_comments_blanks_and_padding() -> None:
    text = f"# rotated 2026-05-01\nnew:{SECOND}=  # active\n\n  old : {FIRST}\n"

    keyring = parse_keyring(text)

    assert [("new", bytes(range(32, 64))), ("old", bytes(range(32)))] == [
        (key.key_id, key.material) for key in keyring.keys
    ]


def test_a_generated_key_line_reads_back_as_the_same_key() -> None:
    key = generate_key("20260501-abcdef")

    assert (key,) == parse_keyring(key_line(key)).keys
    assert 32 == len(key.material)
    assert key.material != generate_key("20260501-abcdef").material


def test_new_key_ids_carry_the_date_and_differ() -> None:
    now = datetime(2026, 5, 1, 23, 59, tzinfo=UTC)

    first, second = new_key_id(now), new_key_id(now)

    assert first.startswith("20260501-")
    assert first != second
    assert KEY_ID_PATTERN.fullmatch(first)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "no key given"),
        (" , # nothing\n", "no key given"),
        (FIRST, "entry 1 is not KEY_ID:BASE64URL_KEY"),
        (f"a:{FIRST},b", "entry 2 is not KEY_ID:BASE64URL_KEY"),
        (f"a:{SHORT}", "key 'a' must be 32 bytes, got 31 bytes"),
        (f"a:{FIRST}AAAA", "key 'a' must be 32 bytes, got 35 bytes"),
        (f"a:{FIRST[:-1]}+", "entry 1 (key id 'a'): the key is not base64url"),
        ("a:%%%", "entry 1 (key id 'a'): the key is not base64url"),
        (f":{FIRST}", "key id '' must be 1 to 32 characters"),
        (f"a b:{FIRST}", "key id 'a b' must be 1 to 32"),
        (f"{'k' * 33}:{FIRST}", "must be 1 to 32 characters"),
        (f"a.b:{FIRST}", "key id 'a.b'"),
        (f"a:{FIRST},a:{SECOND}", "key id 'a' appears more than once"),
    ],
)
def test_bad_key_text_is_refused_with_where_and_why(text: str, problem: str) -> None:
    with pytest.raises(KeyringError) as caught:
        parse_keyring(text)

    assert problem in str(caught.value)
    assert FIRST[:20] not in str(caught.value)
    assert SECOND[:20] not in str(caught.value)


def test_key_material_never_shows_in_repr() -> None:
    key = SealKey("a", bytes(range(32)))

    assert "SealKey(key_id='a')" == repr(key)
    assert FIRST not in repr(parse_keyring(f"a:{FIRST}"))
