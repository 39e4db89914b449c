"""Unpadded base64url with one spelling per byte string."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from outbox.adapters.crypto import base64url


@given(data=st.binary())
def test_decoding_an_encoding_gives_the_bytes_back(data: bytes) -> None:
    text = base64url.encode(data)

    assert data == base64url.decode(text)
    assert "=" not in text


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("AA==", id="padding"),
        pytest.param("AB", id="unused bits set"),
        pytest.param("A", id="one character too many"),
        pytest.param("AA AA", id="space"),
        pytest.param("AA+/", id="standard alphabet"),
        pytest.param("AAé", id="not ascii"),
    ],
)
def test_anything_but_the_canonical_spelling_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="base64url"):
        base64url.decode(text)
