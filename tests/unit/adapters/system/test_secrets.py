"""Codes and tokens drawn from the operating system's CSPRNG."""

from __future__ import annotations

import base64

from outbox.adapters.system.secrets import SystemSecrets


def test_codes_have_exactly_the_digits_asked_for_leading_zeros_kept() -> None:
    codes = [SystemSecrets().code(6) for _ in range(2000)]

    assert all(len(code) == 6 and code.isdigit() for code in codes)
    assert any(code.startswith("0") for code in codes)  # 1 - 0.9**2000: never fails by chance
    assert len(set(codes)) > 1900


def test_tokens_carry_256_bits_and_are_url_safe() -> None:
    token = SystemSecrets().token()

    raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    assert 32 == len(raw)
    assert token == token.strip("+/=")
    assert token != SystemSecrets().token()
