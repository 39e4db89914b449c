"""Envelope v1: round trips, and every kind of wrong or damaged envelope failing closed."""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import strategies as st

from outbox.adapters.crypto.envelope import EnvelopeSealer
from outbox.adapters.crypto.keyring import Keyring, SealKey
from outbox.application.errors import EnvelopeInvalid
from outbox.domain.purposes import Purpose

OLD = SealKey("old", bytes(range(32)))
NEW = SealKey("new", bytes(range(32, 64)))
SEALER = EnvelopeSealer(Keyring((OLD,)))
MESSAGE_ID = UUID("01942f7e-7c00-7abc-8def-0123456789ab")

ids = st.uuids()
purposes = st.sampled_from(Purpose)
plaintexts = st.text()


def _error_text(sealer: EnvelopeSealer, envelope: str, purpose: Purpose = Purpose.SIGN_UP) -> str:
    with pytest.raises(EnvelopeInvalid) as caught:
        sealer.open(message_id=MESSAGE_ID, purpose=purpose, envelope=envelope)
    return str(caught.value)


@given(message_id=ids, purpose=purposes, plaintext=plaintexts)
def test_an_envelope_opens_to_its_plaintext(
    message_id: UUID, purpose: Purpose, plaintext: str
) -> None:
    envelope = SEALER.seal(message_id=message_id, purpose=purpose, plaintext=plaintext)

    assert plaintext == SEALER.open(message_id=message_id, purpose=purpose, envelope=envelope)


@given(plaintext=plaintexts)
def test_the_envelope_text_names_version_and_key_and_hides_the_plaintext(plaintext: str) -> None:
    envelope = SEALER.seal(message_id=MESSAGE_ID, purpose=Purpose.STEP_UP, plaintext=plaintext)

    version, key_id, *parts = envelope.split(".")
    assert ("v1", "old", 3) == (version, key_id, len(parts))
    assert envelope.isascii()
    if len(plaintext) >= 4:
        assert plaintext not in envelope


def test_sealing_one_secret_twice_gives_different_envelopes() -> None:
    first = SEALER.seal(message_id=MESSAGE_ID, purpose=Purpose.SIGN_UP, plaintext="482915")
    second = SEALER.seal(message_id=MESSAGE_ID, purpose=Purpose.SIGN_UP, plaintext="482915")

    assert first != second
    assert first.split(".")[2] != second.split(".")[2]  # salt
    assert first.split(".")[3] != second.split(".")[3]  # nonce


@given(message_id=ids, other_id=ids, purpose=purposes, plaintext=plaintexts)
def test_an_envelope_does_not_open_for_another_message(
    message_id: UUID, other_id: UUID, purpose: Purpose, plaintext: str
) -> None:
    envelope = SEALER.seal(message_id=message_id, purpose=purpose, plaintext=plaintext)

    if other_id != message_id:
        with pytest.raises(EnvelopeInvalid):
            SEALER.open(message_id=other_id, purpose=purpose, envelope=envelope)


@given(message_id=ids, purpose=purposes, other=purposes, plaintext=plaintexts)
def test_an_envelope_does_not_open_for_another_purpose(
    message_id: UUID, purpose: Purpose, other: Purpose, plaintext: str
) -> None:
    envelope = SEALER.seal(message_id=message_id, purpose=purpose, plaintext=plaintext)

    if other is not purpose:
        with pytest.raises(EnvelopeInvalid):
            SEALER.open(message_id=message_id, purpose=other, envelope=envelope)


@given(plaintext=plaintexts, data=st.data())
def test_any_single_bit_flip_anywhere_in_the_envelope_fails(
    plaintext: str, data: st.DataObject
) -> None:
    envelope = SEALER.seal(message_id=MESSAGE_ID, purpose=Purpose.SIGN_UP, plaintext=plaintext)
    raw = bytearray(envelope.encode("ascii"))
    position = data.draw(st.integers(0, len(raw) - 1), label="position")
    raw[position] ^= 1 << data.draw(st.integers(0, 7), label="bit")

    with pytest.raises(EnvelopeInvalid):
        # latin-1 maps every byte to one character, so flips into 0x80..0xff stay visible.
        SEALER.open(message_id=MESSAGE_ID, purpose=Purpose.SIGN_UP, envelope=raw.decode("latin-1"))


@pytest.mark.parametrize(
    "plaintext", ["", "4", "48", "482915", "a-token-of-33-characters-is-here!"]
)
def test_every_single_bit_flip_of_an_envelope_fails(plaintext: str) -> None:
    """Exhaustive over positions and bits, so the unused low bits of each field are covered."""
    envelope = SEALER.seal(message_id=MESSAGE_ID, purpose=Purpose.SIGN_UP, plaintext=plaintext)
    raw = envelope.encode("ascii")
    opened = []
    for position in range(len(raw)):
        for bit in range(8):
            flipped = bytearray(raw)
            flipped[position] ^= 1 << bit
            try:
                SEALER.open(
                    message_id=MESSAGE_ID,
                    purpose=Purpose.SIGN_UP,
                    envelope=flipped.decode("latin-1"),
                )
            except EnvelopeInvalid:
                continue
            opened.append((position, bit))

    assert [] == opened


@given(plaintext=plaintexts, data=st.data())
def test_any_truncated_envelope_fails(plaintext: str, data: st.DataObject) -> None:
    envelope = SEALER.seal(message_id=MESSAGE_ID, purpose=Purpose.SIGN_UP, plaintext=plaintext)
    length = data.draw(st.integers(0, len(envelope) - 1), label="length")

    with pytest.raises(EnvelopeInvalid):
        SEALER.open(message_id=MESSAGE_ID, purpose=Purpose.SIGN_UP, envelope=envelope[:length])


@given(garbage=st.text())
def test_arbitrary_text_never_opens(garbage: str) -> None:
    with pytest.raises(EnvelopeInvalid):
        SEALER.open(message_id=MESSAGE_ID, purpose=Purpose.SIGN_UP, envelope=garbage)


def _sealed() -> list[str]:
    return SEALER.seal(message_id=MESSAGE_ID, purpose=Purpose.SIGN_UP, plaintext="482915").split(
        "."
    )


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda p: ["v2", *p[1:]], id="other version"),
        pytest.param(lambda p: ["V1", *p[1:]], id="version in capitals"),
        pytest.param(lambda p: [p[0], "unknown", *p[2:]], id="unknown key id"),
        pytest.param(lambda p: [*p[:4], p[4] + "A"], id="one character appended"),
        pytest.param(lambda p: [*p[:4], p[4] + "AAAA"], id="three bytes appended"),
        pytest.param(lambda p: [*p, "AAAA"], id="extra field"),
        pytest.param(lambda p: p[:4], id="ciphertext missing"),
        pytest.param(lambda p: [*p[:2], p[2] + "==", *p[3:]], id="padding added"),
        pytest.param(lambda p: [*p[:2], p[2][:-2], *p[3:]], id="salt too short"),
        pytest.param(lambda p: [*p[:3], p[3] + "AAAA", p[4]], id="nonce too long"),
        pytest.param(lambda p: [*p[:4], p[4][:20]], id="shorter than a tag"),
        pytest.param(lambda p: [*p[:2], p[3], p[2], p[4]], id="salt and nonce swapped"),
        pytest.param(lambda p: [*p[:4], "*" + p[4][1:]], id="outside the alphabet"),
    ],
)
def test_a_garbled_envelope_fails_with_the_one_error(
    damage: Callable[[list[str]], list[str]],
) -> None:
    envelope = ".".join(damage(_sealed()))

    assert "the envelope does not open" == _error_text(SEALER, envelope)


def test_every_failure_reads_the_same() -> None:
    """No check reveals itself: version, key id, id, purpose and tag failures read alike."""
    envelope = ".".join(_sealed())
    other_id = UUID(int=MESSAGE_ID.int + 1)
    with pytest.raises(EnvelopeInvalid) as wrong_id:
        SEALER.open(message_id=other_id, purpose=Purpose.SIGN_UP, envelope=envelope)

    texts = {
        _error_text(SEALER, envelope.replace("v1.", "v9.", 1)),
        _error_text(SEALER, envelope.replace(".old.", ".gone.", 1)),
        _error_text(SEALER, envelope, Purpose.STEP_UP),
        str(wrong_id.value),
        _error_text(SEALER, "not an envelope"),
    }

    assert {"the envelope does not open"} == texts
    assert wrong_id.value.__cause__ is None
    assert wrong_id.value.__suppress_context__


def test_after_rotation_old_envelopes_open_and_new_ones_use_the_new_key() -> None:
    before = SEALER.seal(message_id=MESSAGE_ID, purpose=Purpose.MAGIC_LINK, plaintext="token-1")
    rotated = EnvelopeSealer(Keyring((NEW, OLD)))

    after = rotated.seal(message_id=MESSAGE_ID, purpose=Purpose.MAGIC_LINK, plaintext="token-2")

    assert "token-1" == rotated.open(
        message_id=MESSAGE_ID, purpose=Purpose.MAGIC_LINK, envelope=before
    )
    assert "token-2" == rotated.open(
        message_id=MESSAGE_ID, purpose=Purpose.MAGIC_LINK, envelope=after
    )
    assert after.startswith("v1.new.")


def test_a_staged_key_opens_but_does_not_seal() -> None:
    """Rotation step 2: the new key listed second opens its envelopes, the old one still seals."""
    staged = EnvelopeSealer(Keyring((OLD, NEW)))
    from_new = EnvelopeSealer(Keyring((NEW,))).seal(
        message_id=MESSAGE_ID, purpose=Purpose.INVITATION, plaintext="invite"
    )

    assert "invite" == staged.open(
        message_id=MESSAGE_ID, purpose=Purpose.INVITATION, envelope=from_new
    )
    assert staged.seal(
        message_id=MESSAGE_ID, purpose=Purpose.INVITATION, plaintext="invite"
    ).startswith("v1.old.")


def test_an_envelope_under_a_retired_key_fails() -> None:
    envelope = SEALER.seal(message_id=MESSAGE_ID, purpose=Purpose.SIGN_UP, plaintext="482915")

    assert "the envelope does not open" == _error_text(EnvelopeSealer(Keyring((NEW,))), envelope)


def test_a_different_key_under_the_same_id_fails() -> None:
    envelope = SEALER.seal(message_id=MESSAGE_ID, purpose=Purpose.SIGN_UP, plaintext="482915")
    impostor = EnvelopeSealer(Keyring((SealKey("old", NEW.material),)))

    assert "the envelope does not open" == _error_text(impostor, envelope)
