"""Where seal keys come from: variables, a file, or (development only) a generated key."""

from __future__ import annotations

import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from uuid import UUID

import pytest

from outbox.adapters.crypto.envelope import EnvelopeSealer
from outbox.adapters.crypto.keyring import generate_key, key_line, parse_keyring
from outbox.application.errors import EnvelopeInvalid
from outbox.domain.purposes import Purpose
from outbox.entrypoints.bootstrap.seal_keys import load_keyring, load_sealer
from outbox.entrypoints.settings.reader import SettingsError
from outbox.entrypoints.settings.tree import Settings, load_settings

MESSAGE_ID = UUID("01942f7e-7c00-7abc-8def-0123456789ab")
KEY = key_line(generate_key("first"))
OTHER = key_line(generate_key("second"))


def _settings(tmp_path: Path, **variables: str) -> Settings:
    environ = {"OUTBOX_DATA_DIR": str(tmp_path / "data")}
    environ.update({f"OUTBOX_{name}": value for name, value in variables.items()})
    return load_settings(environ)


class Warnings(list[str]):
    """Collects the warnings load_keyring reports."""

    def __call__(self, text: str) -> None:
        self.append(text)


def test_keys_come_from_the_variable_first_key_sealing(tmp_path: Path) -> None:
    warnings = Warnings()

    keyring = load_keyring(
        _settings(tmp_path, ENV="production", SEAL_KEYS=f"{KEY},{OTHER}"), warn=warnings
    )

    assert ["first", "second"] == [key.key_id for key in keyring.keys]
    assert [] == warnings
    assert not (tmp_path / "data").exists()


def test_keys_come_from_the_file_the_variable_names(tmp_path: Path) -> None:
    keys_file = tmp_path / "keys"
    keys_file.write_text(f"# the outbox keys\n{OTHER}\n{KEY}\n", encoding="utf-8")

    keyring = load_keyring(_settings(tmp_path, ENV="staging", SEAL_KEYS_FILE=str(keys_file)))

    assert ["second", "first"] == [key.key_id for key in keyring.keys]


def test_the_loaded_sealer_seals_with_the_configured_key(tmp_path: Path) -> None:
    sealer = load_sealer(_settings(tmp_path, ENV="production", SEAL_KEYS=KEY))
    envelope = sealer.seal(message_id=MESSAGE_ID, purpose=Purpose.STEP_UP, plaintext="123456")

    reference = EnvelopeSealer(parse_keyring(KEY))

    assert envelope.startswith("v1.first.")
    assert "123456" == reference.open(
        message_id=MESSAGE_ID, purpose=Purpose.STEP_UP, envelope=envelope
    )


@pytest.mark.parametrize("environment", ["staging", "production"])
def test_staging_and_production_refuse_to_start_without_a_key(
    tmp_path: Path, environment: str
) -> None:
    with pytest.raises(SettingsError) as caught:
        load_keyring(_settings(tmp_path, ENV=environment))

    assert "OUTBOX_SEAL_KEYS" == caught.value.variable
    assert f"required in {environment}" in caught.value.problem
    assert not (tmp_path / "data").exists()


def test_development_generates_a_private_key_file_and_warns(tmp_path: Path) -> None:
    warnings = Warnings()

    keyring = load_keyring(_settings(tmp_path), warn=warnings)

    key_file = tmp_path / "data" / "seal-keys"
    assert 0o600 == stat.S_IMODE(key_file.stat().st_mode)
    assert keyring == parse_keyring(key_file.read_text(encoding="utf-8"))
    assert 1 == len(warnings)
    assert "OUTBOX_SEAL_KEYS is not set: generated a development seal key" in warnings[0]
    assert key_line(keyring.active) not in warnings[0]
    assert [key_file] == list(key_file.parent.iterdir())  # no temporary file left behind


def test_development_reuses_its_key_on_the_next_start(tmp_path: Path) -> None:
    first_start = load_sealer(_settings(tmp_path), warn=Warnings())
    envelope = first_start.seal(message_id=MESSAGE_ID, purpose=Purpose.SIGN_UP, plaintext="42")
    warnings = Warnings()

    second_start = load_sealer(_settings(tmp_path), warn=warnings)

    assert "42" == second_start.open(
        message_id=MESSAGE_ID, purpose=Purpose.SIGN_UP, envelope=envelope
    )
    assert [
        f"OUTBOX_SEAL_KEYS is not set: using the development seal key in {tmp_path}/data/seal-keys"
    ] == warnings


def test_a_configured_key_replaces_the_development_key(tmp_path: Path) -> None:
    development = load_sealer(_settings(tmp_path), warn=Warnings())
    envelope = development.seal(message_id=MESSAGE_ID, purpose=Purpose.SIGN_UP, plaintext="42")

    configured = load_sealer(_settings(tmp_path, SEAL_KEYS=KEY))

    with pytest.raises(EnvelopeInvalid):
        configured.open(message_id=MESSAGE_ID, purpose=Purpose.SIGN_UP, envelope=envelope)


def test_development_does_not_overwrite_a_key_file_it_finds(tmp_path: Path) -> None:
    key_file = tmp_path / "data" / "seal-keys"
    key_file.parent.mkdir()
    key_file.write_text(OTHER + "\n", encoding="utf-8")

    keyring = load_keyring(_settings(tmp_path), warn=Warnings())

    assert "second" == keyring.active.key_id
    assert OTHER + "\n" == key_file.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("variables", "variable", "problem"),
    [
        ({"SEAL_KEYS": "first"}, "OUTBOX_SEAL_KEYS", "entry 1 is not KEY_ID:BASE64URL_KEY"),
        ({"SEAL_KEYS": "a:AAAA"}, "OUTBOX_SEAL_KEYS", "key 'a' must be 32 bytes, got 3 bytes"),
        ({"SEAL_KEYS": f"{KEY},{KEY}"}, "OUTBOX_SEAL_KEYS", "appears more than once"),
        (
            {"SEAL_KEYS": KEY, "SEAL_KEYS_FILE": "/keys"},
            "OUTBOX_SEAL_KEYS",
            "set either OUTBOX_SEAL_KEYS or OUTBOX_SEAL_KEYS_FILE, not both",
        ),
        ({"SEAL_KEYS_FILE": "/nonexistent/keys"}, "OUTBOX_SEAL_KEYS_FILE", "cannot read"),
    ],
)
def test_bad_key_configuration_names_the_variable(
    tmp_path: Path, variables: dict[str, str], variable: str, problem: str
) -> None:
    with pytest.raises(SettingsError) as caught:
        load_keyring(_settings(tmp_path, ENV="production", **variables))

    assert variable == caught.value.variable
    assert problem in caught.value.problem
    assert KEY.split(":")[1] not in str(caught.value)


def test_a_bad_key_file_names_the_file_variable(tmp_path: Path) -> None:
    keys_file = tmp_path / "keys"
    keys_file.write_text("not a key\n", encoding="utf-8")

    with pytest.raises(SettingsError) as caught:
        load_keyring(_settings(tmp_path, ENV="production", SEAL_KEYS_FILE=str(keys_file)))

    assert "OUTBOX_SEAL_KEYS_FILE" == caught.value.variable


def test_a_damaged_development_key_file_is_refused_naming_it(tmp_path: Path) -> None:
    key_file = tmp_path / "data" / "seal-keys"
    key_file.parent.mkdir()
    key_file.write_text("", encoding="utf-8")

    with pytest.raises(SettingsError) as caught:
        load_keyring(_settings(tmp_path), warn=Warnings())

    assert caught.value.variable.startswith("OUTBOX_SEAL_KEYS (development key file ")
    assert "no key given" in caught.value.problem


def test_processes_starting_together_in_development_agree_on_one_key(tmp_path: Path) -> None:
    """The API and the worker of ``outboxctl up`` may both find no key; one key file wins."""
    settings = _settings(tmp_path)
    with ThreadPoolExecutor(max_workers=8) as pool:
        keyrings = list(pool.map(lambda _: load_keyring(settings, warn=Warnings()), range(16)))

    assert 1 == len({keyring.active for keyring in keyrings})
    assert ["seal-keys"] == [path.name for path in (tmp_path / "data").iterdir()]
