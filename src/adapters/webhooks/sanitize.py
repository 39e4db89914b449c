"""What of a webhook body may be kept: addresses masked, secrets and mail headers dropped."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from outbox.domain.destinations import mask

# Any address-like token, wherever it appears (a field, a diagnostic, a WhatsApp jid).
_ADDRESS = re.compile(r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*")
# A phone number standing on its own: 7 to 15 digits, with or without the plus.
_PHONE = re.compile(r"(?<![A-Za-z0-9])\+?[0-9]{7,15}(?![A-Za-z0-9])")
# Keys whose values are never kept: credentials, and the headers (subject, To, From...).
_DROPPED = ("token", "secret", "password", "signature", "authorization", "headers", "subject")
_MAX_TEXT = 500
_MAX_DEPTH = 8
_MAX_ITEMS = 50


def sanitise(value: Any, depth: int = 0) -> Any:
    """A copy of a parsed JSON ``value`` safe to store: see the module's docstring."""
    if depth > _MAX_DEPTH:
        return "..."
    if isinstance(value, Mapping):
        return {
            str(key): sanitise(item, depth + 1)
            for key, item in list(value.items())[:_MAX_ITEMS]
            if not any(word in str(key).lower() for word in _DROPPED)
        }
    if isinstance(value, list | tuple):
        return [sanitise(item, depth + 1) for item in list(value)[:_MAX_ITEMS]]
    if isinstance(value, str):
        return mask_text(value)[:_MAX_TEXT]
    if isinstance(value, bool | int | float) or value is None:
        return value
    return mask_text(str(value))[:_MAX_TEXT]


def mask_text(text: str) -> str:
    """``text`` with every address and phone number in it masked."""
    masked = _ADDRESS.sub(lambda match: _mask_address(match.group(0)), text)
    return _PHONE.sub(
        lambda match: mask(match.group(0)) if match.group(0)[0] == "+" else "***", masked
    )


def _mask_address(value: str) -> str:
    masked = mask(value)
    if masked != "***":
        return masked
    local, _, host = value.partition("@")
    return f"{local[:1]}***@{host.lower()}"
