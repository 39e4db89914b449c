"""Argon2id hashing: PHC strings that verify the right secret and nothing else."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from outbox.adapters.crypto.hashing import Argon2idHasher, Argon2Parameters

CHEAP = Argon2Parameters.cheapest()
HASHER = Argon2idHasher(CHEAP)
PHC = re.compile(r"\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)")


def test_a_hash_is_a_phc_string_with_the_configured_costs() -> None:
    hashed = Argon2idHasher(Argon2Parameters(memory_kib=64, iterations=3, lanes=2)).hash("482915")

    match = PHC.fullmatch(hashed)
    assert match is not None
    assert ("64", "3", "2") == match.group(1, 2, 3)
    assert 22 == len(match[4])  # 16 salt bytes, unpadded base64
    assert 43 == len(match[5])  # 32 hash bytes, unpadded base64


def test_the_defaults_are_owasps_argon2id_recommendation() -> None:
    defaults = Argon2Parameters()

    assert (19 * 1024, 2, 1) == (defaults.memory_kib, defaults.iterations, defaults.lanes)
    assert Argon2idHasher().hash("x").startswith("$argon2id$v=19$m=19456,t=2,p=1$")


@settings(max_examples=25)
@given(secret=st.text(), other=st.text())
def test_a_hash_verifies_its_secret_and_no_other(secret: str, other: str) -> None:
    hashed = HASHER.hash(secret)

    assert HASHER.verify(secret, hashed)
    assert (other == secret) == HASHER.verify(other, hashed)


def test_hashing_one_secret_twice_salts_differently() -> None:
    assert HASHER.hash("482915") != HASHER.hash("482915")


def test_a_wrong_secret_does_not_verify() -> None:
    assert not HASHER.verify("482916", HASHER.hash("482915"))


def test_hashes_made_under_other_costs_still_verify() -> None:
    """Costs come from the stored hash, so raising the parameters keeps old hashes valid."""
    old = Argon2idHasher(Argon2Parameters(memory_kib=16, iterations=1, lanes=2)).hash("code")

    assert HASHER.verify("code", old)


def test_a_lone_surrogate_hashes_and_verifies_instead_of_raising() -> None:
    hashed = HASHER.hash("\ud800")

    assert HASHER.verify("\ud800", hashed)
    assert not HASHER.verify("\ud801", hashed)


def _valid() -> str:
    return HASHER.hash("482915")


@pytest.mark.parametrize(
    "malformed",
    [
        pytest.param("", id="empty"),
        pytest.param("482915", id="plaintext"),
        pytest.param(_valid().replace("argon2id", "argon2i", 1), id="argon2i"),
        pytest.param(_valid().replace("v=19", "v=16", 1), id="old version"),
        pytest.param(_valid().replace("m=8,", "m=7,", 1), id="memory below the minimum"),
        pytest.param(_valid().replace("t=1,", "t=0,", 1), id="no iterations"),
        pytest.param(_valid().replace("m=8,", "m=08,", 1), id="leading zero"),
        pytest.param(_valid() + "=", id="padded hash"),
        pytest.param(_valid()[:-10], id="truncated hash"),
        pytest.param(_valid().rsplit("$", 1)[0], id="hash missing"),
        pytest.param(_valid().replace("$", "$$", 1), id="doubled separator"),
        pytest.param(" " + _valid(), id="leading space"),
        pytest.param(_valid() + "\n", id="trailing newline"),
        pytest.param(_valid().replace("m=8,", "m=2097152,", 1), id="memory above the ceiling"),
        pytest.param(_valid().replace("t=1,", "t=1000,", 1), id="iterations above the ceiling"),
        pytest.param("$argon2id$v=19$m=8,t=1,p=1$$", id="no salt or hash"),
    ],
)
def test_a_malformed_hash_verifies_as_false(malformed: str) -> None:
    assert not HASHER.verify("482915", malformed)


def test_the_original_of_the_malformed_cases_does_verify() -> None:
    """Guards the table above: each case fails because of its change, not a bad base."""
    assert HASHER.verify("482915", _valid())
