"""Where the outbox seal keys come from, and the development-only generated key."""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from outbox.adapters.crypto.envelope import EnvelopeSealer
from outbox.adapters.crypto.keyring import (
    Keyring,
    KeyringError,
    generate_key,
    key_line,
    new_key_id,
    parse_keyring,
)
from outbox.application.ports import Sealer
from outbox.entrypoints.settings.reader import PREFIX, SettingsError
from outbox.entrypoints.settings.tree import Settings

SEAL_KEYS = PREFIX + "SEAL_KEYS"
SEAL_KEYS_FILE = PREFIX + "SEAL_KEYS_FILE"
DEVELOPMENT_KEYS_FILE = "seal-keys"

Warn = Callable[[str], None]


def _print_warning(text: str) -> None:
    print(f"warning: {text}", file=sys.stderr)


def load_sealer(settings: Settings, *, warn: Warn = _print_warning) -> Sealer:
    """The envelope sealer over the configured keys; raises SettingsError naming the variable."""
    return EnvelopeSealer(load_keyring(settings, warn=warn))


def load_keyring(settings: Settings, *, warn: Warn = _print_warning) -> Keyring:
    """Read the keys from OUTBOX_SEAL_KEYS, else OUTBOX_SEAL_KEYS_FILE, else (development) the
    data directory, generating a key there on first start; ``warn`` hears about the fallback.
    """
    if settings.seal_keys is not None and settings.seal_keys_file is not None:
        raise SettingsError(SEAL_KEYS, f"set either {SEAL_KEYS} or {SEAL_KEYS_FILE}, not both")
    if settings.seal_keys is not None:
        return _parse(settings.seal_keys, SEAL_KEYS)
    if settings.seal_keys_file is not None:
        return _parse(_read(settings.seal_keys_file, SEAL_KEYS_FILE), SEAL_KEYS_FILE)
    if not settings.is_development:
        raise SettingsError(
            SEAL_KEYS,
            f"required in {settings.environment}: set it (or {SEAL_KEYS_FILE}) to a key line "
            "printed by `outboxctl keys generate`",
        )
    return _development_keyring(settings.data_dir / DEVELOPMENT_KEYS_FILE, warn)


def _parse(text: str, variable: str) -> Keyring:
    try:
        return parse_keyring(text)
    except KeyringError as error:
        raise SettingsError(variable, str(error)) from None


def _read(path: Path, variable: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise SettingsError(variable, f"cannot read {path}: {reason}") from None


def _development_keyring(path: Path, warn: Warn) -> Keyring:
    """Reuse the data directory's key, or create it (mode 0600) when this is the first start."""
    variable = f"{SEAL_KEYS} (development key file {path})"
    if not path.exists():
        try:
            _create_key_file(path, key_line(generate_key(new_key_id(datetime.now(UTC)))) + "\n")
        except OSError as error:
            raise SettingsError(
                PREFIX + "DATA_DIR",
                f"cannot create the development seal key {path}: {error.strerror}",
            ) from None
        warn(
            f"{SEAL_KEYS} is not set: generated a development seal key in {path}; "
            "staging and production refuse to start without a configured key"
        )
    else:
        warn(f"{SEAL_KEYS} is not set: using the development seal key in {path}")
    return _parse(_read(path, variable), variable)


def _create_key_file(path: Path, content: str) -> None:
    """Write the whole file under a temporary name, then link it into place.

    Linking fails if another process (the API beside the worker in ``outboxctl up``) got
    there first; its key is then the one both use, and no reader ever sees half a file.
    """
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            os.fchmod(file.fileno(), 0o600)  # exactly owner read/write, whatever the umask
            file.write(content)
            file.flush()
            os.fsync(file.fileno())
        with contextlib.suppress(FileExistsError):
            os.link(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
