"""Envelope v1: AES-256-GCM under a per-message HKDF-SHA256 data key, bound to id and purpose.

The format is specified in docs/envelope.md; change both together.
"""

from __future__ import annotations

import os
from uuid import UUID

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from outbox.adapters.crypto import base64url
from outbox.adapters.crypto.keyring import Keyring, SealKey
from outbox.application.errors import EnvelopeInvalid
from outbox.domain.purposes import Purpose

VERSION = "v1"
SALT_BYTES = 16
NONCE_BYTES = 12
TAG_BYTES = 16
DATA_KEY_BYTES = 32
HKDF_INFO = b"outbox envelope v1 data key"

_SHA256 = hashes.SHA256()
_PARTS = 5  # version, key id, salt, nonce, ciphertext


def aad_field(value: bytes) -> bytes:
    """One AAD field: its length as 4 big-endian bytes, then the bytes themselves."""
    return len(value).to_bytes(4, "big") + value


class _LoadedKey:
    """A key with what every envelope under it shares, computed once."""

    __slots__ = ("aad_prefix", "material", "text_prefix")

    def __init__(self, key: SealKey) -> None:
        self.material = key.material
        self.aad_prefix = aad_field(VERSION.encode("ascii")) + aad_field(key.key_id.encode("ascii"))
        self.text_prefix = f"{VERSION}.{key.key_id}."


def _additional_data(key: _LoadedKey, message_id: UUID, purpose: Purpose) -> bytes:
    # Version and key id, message id, purpose: each length-prefixed, so no field can absorb another.
    return key.aad_prefix + aad_field(message_id.bytes) + aad_field(purpose.encode("utf-8"))


def _invalid() -> EnvelopeInvalid:
    # One message for every failed check, so neither logs nor callers learn which one failed.
    return EnvelopeInvalid("the envelope does not open")


class EnvelopeSealer:
    """Seals with the keyring's active key and opens envelopes under any key it holds."""

    __slots__ = ("_active", "_keys")

    def __init__(self, keyring: Keyring) -> None:
        self._keys = {key.key_id: _LoadedKey(key) for key in keyring.keys}
        self._active = self._keys[keyring.active.key_id]

    def seal(self, *, message_id: UUID, purpose: Purpose, plaintext: str) -> str:
        """Return the v1 envelope of ``plaintext``, bound to ``message_id`` and ``purpose``."""
        key = self._active
        random = os.urandom(SALT_BYTES + NONCE_BYTES)
        salt, nonce = random[:SALT_BYTES], random[SALT_BYTES:]
        ciphertext = AESGCM(self._data_key(key, salt)).encrypt(
            nonce,
            plaintext.encode("utf-8"),
            _additional_data(key, message_id, purpose),
        )
        return (
            f"{key.text_prefix}{base64url.encode(salt)}."
            f"{base64url.encode(nonce)}.{base64url.encode(ciphertext)}"
        )

    def open(self, *, message_id: UUID, purpose: Purpose, envelope: str) -> str:
        """Return the plaintext; raises EnvelopeInvalid for any envelope that does not open."""
        parts = envelope.split(".")
        if len(parts) != _PARTS or parts[0] != VERSION:
            raise _invalid()
        key = self._keys.get(parts[1])
        if key is None:
            raise _invalid()
        try:
            salt, nonce, ciphertext = (base64url.decode(part) for part in parts[2:])
        except ValueError:
            raise _invalid() from None
        if len(salt) != SALT_BYTES or len(nonce) != NONCE_BYTES or len(ciphertext) < TAG_BYTES:
            raise _invalid()
        try:
            plaintext = AESGCM(self._data_key(key, salt)).decrypt(
                nonce,
                ciphertext,
                _additional_data(key, message_id, purpose),
            )
            return plaintext.decode("utf-8")
        except (InvalidTag, UnicodeDecodeError):
            raise _invalid() from None

    @staticmethod
    def _data_key(key: _LoadedKey, salt: bytes) -> bytes:
        return HKDF(algorithm=_SHA256, length=DATA_KEY_BYTES, salt=salt, info=HKDF_INFO).derive(
            key.material
        )
