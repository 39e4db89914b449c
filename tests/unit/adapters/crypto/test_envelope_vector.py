"""The test vector in docs/envelope.md, checked against the page's own recipe and the sealer."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from uuid import UUID

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from outbox.adapters.crypto.envelope import EnvelopeSealer
from outbox.adapters.crypto.keyring import parse_keyring
from outbox.application.errors import EnvelopeInvalid
from outbox.domain.purposes import Purpose

DOC = Path(__file__).parents[4] / "docs" / "envelope.md"


def _vector() -> dict[str, str]:
    section = DOC.read_text(encoding="utf-8").split("## Test vector", 1)[1]
    block = re.search(r"```text\n(.*?)```", section, re.DOTALL)
    assert block is not None, "docs/envelope.md has no test vector block"
    pairs = (line.split("=", 1) for line in block.group(1).splitlines() if line.strip())
    return {name.strip(): value.strip() for name, value in pairs}


VECTOR = _vector()


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _field(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def test_the_documented_recipe_gives_the_documented_envelope() -> None:
    """An implementation written only from the page reproduces every value of the vector."""
    key = bytes.fromhex(VECTOR["key"])
    salt = bytes.fromhex(VECTOR["salt"])
    nonce = bytes.fromhex(VECTOR["nonce"])
    info = b"outbox envelope v1 data key"
    data_key = HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=info).derive(key)
    aad = (
        _field(b"v1")
        + _field(VECTOR["key id"].encode("ascii"))
        + _field(UUID(VECTOR["message id"]).bytes)
        + _field(VECTOR["purpose"].encode("utf-8"))
    )
    sealed = AESGCM(data_key).encrypt(nonce, VECTOR["plaintext"].encode("utf-8"), aad)
    envelope = ".".join(["v1", VECTOR["key id"], _b64url(salt), _b64url(nonce), _b64url(sealed)])

    assert 27 == len(info)
    assert f"{VECTOR['key id']}:{_b64url(key)}" == VECTOR["key line"]
    assert VECTOR["data key"] == data_key.hex()
    assert VECTOR["aad"] == aad.hex()
    assert VECTOR["sealed"] == sealed.hex()
    assert VECTOR["envelope"] == envelope


def test_the_sealer_opens_the_documented_envelope() -> None:
    sealer = EnvelopeSealer(parse_keyring(VECTOR["key line"]))

    opened = sealer.open(
        message_id=UUID(VECTOR["message id"]),
        purpose=Purpose(VECTOR["purpose"]),
        envelope=VECTOR["envelope"],
    )

    assert VECTOR["plaintext"] == opened


@pytest.mark.parametrize(
    ("message_id", "purpose"),
    [
        ("01942f7e-7c00-7abc-8def-0123456789ac", Purpose.SIGN_UP),
        ("01942f7e-7c00-7abc-8def-0123456789ab", Purpose.STEP_UP),
    ],
)
def test_the_documented_envelope_fails_for_the_documented_mismatches(
    message_id: str, purpose: Purpose
) -> None:
    sealer = EnvelopeSealer(parse_keyring(VECTOR["key line"]))

    with pytest.raises(EnvelopeInvalid):
        sealer.open(message_id=UUID(message_id), purpose=purpose, envelope=VECTOR["envelope"])


def test_the_sealer_seals_in_the_documented_layout() -> None:
    """What the sealer writes opens with the page's recipe: the layout is the documented one."""
    sealer = EnvelopeSealer(parse_keyring(VECTOR["key line"]))
    message_id = UUID(VECTOR["message id"])
    envelope = sealer.seal(message_id=message_id, purpose=Purpose.MAGIC_LINK, plaintext="tok")

    version, key_id, salt, nonce, sealed = envelope.split(".")
    salt_bytes, nonce_bytes, sealed_bytes = (
        base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)) for part in (salt, nonce, sealed)
    )
    data_key = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=salt_bytes, info=b"outbox envelope v1 data key"
    ).derive(bytes.fromhex(VECTOR["key"]))
    aad = _field(b"v1") + _field(key_id.encode()) + _field(message_id.bytes) + _field(b"magic_link")

    assert ("v1", VECTOR["key id"], 16, 12) == (version, key_id, len(salt_bytes), len(nonce_bytes))
    assert b"tok" == AESGCM(data_key).decrypt(nonce_bytes, sealed_bytes, aad)
