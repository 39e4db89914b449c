"""``outboxctl keys generate``: a key line the service loads."""

from __future__ import annotations

from uuid import UUID

from typer.testing import CliRunner

from outbox.adapters.crypto.envelope import EnvelopeSealer
from outbox.adapters.crypto.keyring import KEY_ID_PATTERN, parse_keyring
from outbox.domain.purposes import Purpose
from outbox.entrypoints.bootstrap.seal_keys import load_sealer
from outbox.entrypoints.cli.app import app
from outbox.entrypoints.cli.exit_codes import ExitCode
from outbox.entrypoints.settings.tree import load_settings

runner = CliRunner()


def test_generate_prints_one_key_line_that_the_service_loads() -> None:
    result = runner.invoke(app, ["keys", "generate"])

    assert 0 == result.exit_code
    [line] = result.stdout.splitlines()
    sealer = load_sealer(load_settings({"OUTBOX_ENV": "production", "OUTBOX_SEAL_KEYS": line}))
    message_id = UUID(int=7)
    envelope = sealer.seal(message_id=message_id, purpose=Purpose.SIGN_UP, plaintext="482915")
    key_id = line.split(":")[0]
    assert KEY_ID_PATTERN.fullmatch(key_id)
    assert envelope.startswith(f"v1.{key_id}.")
    assert "482915" == sealer.open(
        message_id=message_id, purpose=Purpose.SIGN_UP, envelope=envelope
    )
    assert "OUTBOX_SEAL_KEYS" in result.stderr


def test_generate_makes_a_new_key_every_time() -> None:
    first = runner.invoke(app, ["keys", "generate"]).stdout.strip()
    second = runner.invoke(app, ["keys", "generate"]).stdout.strip()

    assert first.split(":")[0] != second.split(":")[0]
    assert parse_keyring(first).active.material != parse_keyring(second).active.material


def test_generate_uses_the_key_id_given() -> None:
    result = runner.invoke(app, ["keys", "generate", "--key-id", "2026-q3"])

    keyring = parse_keyring(result.stdout)
    assert ("2026-q3",) == tuple(key.key_id for key in keyring.keys)
    assert (
        EnvelopeSealer(keyring)
        .seal(message_id=UUID(int=1), purpose=Purpose.STEP_UP, plaintext="1")
        .startswith("v1.2026-q3.")
    )


def test_generate_refuses_a_key_id_envelopes_cannot_carry() -> None:
    result = runner.invoke(app, ["keys", "generate", "--key-id", "q3.2026"])

    assert ExitCode.USAGE == result.exit_code
    assert "" == result.stdout
    assert "--key-id" in result.stderr
