"""``outboxctl keys``: make outbox seal keys."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer

from outbox.adapters.crypto.keyring import KEY_ID_PATTERN, generate_key, key_line, new_key_id

keys_app = typer.Typer(help="Manage the outbox seal keys.", no_args_is_help=True)


def _check_key_id(value: str | None) -> str | None:
    if value is not None and not KEY_ID_PATTERN.fullmatch(value):
        raise typer.BadParameter("use 1 to 32 characters of A-Z, a-z, 0-9, '-' and '_'")
    return value


@keys_app.command("generate")
def generate(
    key_id: Annotated[
        str | None,
        typer.Option(
            "--key-id",
            help="The id envelopes name the key by (default: today's date and a random suffix).",
            callback=_check_key_id,
        ),
    ] = None,
) -> None:
    """Print a new key line (KEY_ID:BASE64URL_KEY) for OUTBOX_SEAL_KEYS or its file."""
    key = generate_key(key_id or new_key_id(datetime.now(UTC)))
    typer.echo(key_line(key))
    typer.echo(
        "Add this line after the current key in OUTBOX_SEAL_KEYS on every process, then move "
        "it first to seal with it (docs/envelope.md, rotation).",
        err=True,
    )
