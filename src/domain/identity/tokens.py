"""Bearer tokens are stored only as their SHA-256 digest (they carry 256 random bits)."""

from __future__ import annotations

import hashlib


def token_digest(token: str) -> str:
    """The hex SHA-256 digest a table keeps in place of ``token``."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
