"""One-time codes and bearer tokens from the operating system's CSPRNG."""

from __future__ import annotations

import secrets

TOKEN_BYTES = 32  # 256 bits


class SystemSecrets:
    """SecretSource over the ``secrets`` module."""

    def code(self, digits: int) -> str:
        """A uniformly random code of ``digits`` decimal digits (leading zeros kept)."""
        return f"{secrets.randbelow(10**digits):0{digits}d}"

    def token(self) -> str:
        """A URL-safe token carrying 256 random bits."""
        return secrets.token_urlsafe(TOKEN_BYTES)
