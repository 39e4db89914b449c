"""Argon2id hashing of passwords, codes and tokens, stored as PHC strings."""

from __future__ import annotations

import os
import re

import attrs
from cryptography.exceptions import InvalidKey
from cryptography.hazmat.primitives.kdf.argon2 import Argon2id

# Only what we produce: Argon2id, version 19 (0x13), base64 without padding.
_PHC = re.compile(
    r"\$argon2id\$v=19\$m=(?P<m>[1-9][0-9]{0,9}),t=(?P<t>[1-9][0-9]{0,9}),p=(?P<p>[1-9][0-9]{0,5})"
    r"\$[A-Za-z0-9+/]{11,}\$[A-Za-z0-9+/]{16,}"
)


@attrs.frozen(kw_only=True)
class Argon2Parameters:
    """Argon2id costs; the defaults are OWASP's first recommendation (19 MiB, 2 passes, 1 lane)."""

    memory_kib: int = 19 * 1024
    iterations: int = 2
    lanes: int = 1
    salt_bytes: int = 16
    hash_bytes: int = 32
    # Hashes asking for more than this are refused, so a corrupt row cannot exhaust memory.
    max_memory_kib: int = 1024 * 1024
    max_iterations: int = 64
    max_lanes: int = 64

    @classmethod
    def cheapest(cls) -> Argon2Parameters:
        """The smallest costs Argon2id allows: for tests only, never for stored secrets."""
        return cls(memory_kib=8, iterations=1, lanes=1)


class Argon2idHasher:
    """SecretHasher producing ``$argon2id$v=19$m=…,t=…,p=…$salt$hash`` strings."""

    __slots__ = ("_parameters",)

    def __init__(self, parameters: Argon2Parameters | None = None) -> None:
        self._parameters = parameters or Argon2Parameters()

    def hash(self, secret: str) -> str:
        """Return the PHC string of ``secret`` under a fresh random salt."""
        p = self._parameters
        kdf = Argon2id(
            salt=os.urandom(p.salt_bytes),
            length=p.hash_bytes,
            iterations=p.iterations,
            lanes=p.lanes,
            memory_cost=p.memory_kib,
        )
        return kdf.derive_phc_encoded(_encode(secret))

    def verify(self, secret: str, hashed: str) -> bool:
        """Whether ``secret`` matches ``hashed``; False for a malformed or over-costly hash.

        The costs come from ``hashed`` itself, so hashes made under older parameters keep
        verifying; the final comparison is constant-time (cryptography's own).
        """
        match = _PHC.fullmatch(hashed)
        p = self._parameters
        if (
            match is None
            or int(match["m"]) > p.max_memory_kib
            or int(match["t"]) > p.max_iterations
            or int(match["p"]) > p.max_lanes
        ):
            return False
        try:
            Argon2id.verify_phc_encoded(_encode(secret), hashed)
        except (InvalidKey, ValueError):
            return False
        return True


def _encode(secret: str) -> bytes:
    # surrogatepass: a lone surrogate (possible in decoded JSON) hashes instead of raising.
    return secret.encode("utf-8", "surrogatepass")
