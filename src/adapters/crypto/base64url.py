"""Base64url without padding (RFC 4648 §5), decoded strictly so each value has one spelling."""

from __future__ import annotations

import base64
import binascii


def encode(data: bytes) -> str:
    """Return ``data`` as unpadded base64url text."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def decode(text: str) -> bytes:
    """Return the bytes ``text`` spells; raises ValueError for anything but canonical unpadded form.

    The round-trip check refuses padding, characters outside the alphabet (which the
    standard library would skip) and non-zero unused trailing bits, so a changed character
    can never decode to the same bytes.
    """
    if not text.isascii():
        raise ValueError("not base64url")
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except binascii.Error:
        raise ValueError("not base64url") from None
    if encode(data) != text:
        raise ValueError("not canonical base64url")
    return data
