"""The outbox seal keys: parsed from configuration text, the sealing (newest) key first."""

from __future__ import annotations

import re
import secrets
from datetime import datetime

import attrs

from outbox.adapters.crypto import base64url

KEY_BYTES = 32
KEY_ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,32}")


class KeyringError(ValueError):
    """Key configuration is malformed; the message says where, never what the key material is."""


def _check_key_id(_instance: object, _attribute: object, key_id: str) -> None:
    if not KEY_ID_PATTERN.fullmatch(key_id):
        raise KeyringError(
            f"key id {key_id!r} must be 1 to 32 characters of A-Z, a-z, 0-9, '-' and '_'"
        )


def _check_material(instance: SealKey, _attribute: object, material: bytes) -> None:
    if len(material) != KEY_BYTES:
        raise KeyringError(
            f"key {instance.key_id!r} must be {KEY_BYTES} bytes, got {len(material)} bytes"
        )


@attrs.frozen
class SealKey:
    """One 32-byte outbox key and the id envelopes name it by."""

    key_id: str = attrs.field(validator=_check_key_id)
    material: bytes = attrs.field(repr=False, validator=_check_material)


def _check_keys(_instance: object, _attribute: object, keys: tuple[SealKey, ...]) -> None:
    if not keys:
        raise KeyringError("no key given; expected KEY_ID:BASE64URL_KEY entries")
    seen: set[str] = set()
    for key in keys:
        if key.key_id in seen:
            raise KeyringError(f"key id {key.key_id!r} appears more than once")
        seen.add(key.key_id)


@attrs.frozen
class Keyring:
    """The loaded keys; the first one seals, every one opens."""

    keys: tuple[SealKey, ...] = attrs.field(validator=_check_keys)

    @property
    def active(self) -> SealKey:
        """The key new envelopes are sealed with."""
        return self.keys[0]


def parse_keyring(text: str) -> Keyring:
    """Parse ``KEY_ID:BASE64URL_KEY`` entries separated by commas or newlines, sealing key first.

    Blank entries and ``#`` comments (to the end of a line) are ignored. Raises KeyringError.
    """
    entries = [
        entry.strip()
        for line in text.splitlines()
        for entry in line.partition("#")[0].split(",")
        if entry.strip()
    ]
    keys: list[SealKey] = []
    for number, entry in enumerate(entries, start=1):
        key_id, separator, encoded = entry.partition(":")
        if not separator:
            raise KeyringError(f"entry {number} is not KEY_ID:BASE64URL_KEY")
        try:
            material = base64url.decode(encoded.strip().rstrip("="))
        except ValueError:
            raise KeyringError(
                f"entry {number} (key id {key_id.strip()!r}): the key is not base64url"
            ) from None
        keys.append(SealKey(key_id.strip(), material))
    return Keyring(tuple(keys))


def generate_key(key_id: str) -> SealKey:
    """A new random key named ``key_id``."""
    return SealKey(key_id, secrets.token_bytes(KEY_BYTES))


def new_key_id(now: datetime) -> str:
    """A fresh key id that sorts by creation date, e.g. ``20260501-3fa2c1``."""
    return f"{now:%Y%m%d}-{secrets.token_hex(3)}"


def key_line(key: SealKey) -> str:
    """The ``KEY_ID:BASE64URL_KEY`` entry that ``parse_keyring`` reads back."""
    return f"{key.key_id}:{base64url.encode(key.material)}"
