"""Idempotency keys of staff requests: what a client may send, checked once for every entry."""

from __future__ import annotations

import re

from outbox.application.errors import InvalidField

MAX_LENGTH = 255
# Visible ASCII only: a key travels in an HTTP header and is stored in the audit table.
_KEY = re.compile(rf"[\x21-\x7e]{{1,{MAX_LENGTH}}}", re.ASCII)


def check_idempotency_key(raw: str | None, field: str = "Idempotency-Key") -> str | None:
    """The key, or None when absent; raises InvalidField naming ``field`` for a bad one."""
    if raw is None:
        return None
    if _KEY.fullmatch(raw) is None:
        raise InvalidField(field, f"1 to {MAX_LENGTH} visible ASCII characters")
    return raw
