"""What of a webhook body may be kept: addresses masked, secrets and mail headers dropped."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from outbox.domain.destinations import mask

# Any address-like token, wherever it appears (a field, a key, a diagnostic, a WhatsApp
# jid), in any script: ``пользователь@пример.рф`` as well as ``a@example.com``.
_ADDRESS = re.compile(r"[\w.!#$%&'*+/=?^`{|}~-]+@[\w-]+(?:[.\u3002\uff0e\uff61][\w-]+)*")
# A phone number standing on its own: 7 to 15 digits with or without the plus, or an
# international one written in groups (``+34 612 34 56 78``, ``+1 (415) 555-0100``).
_PHONE = re.compile(r"(?<![\w+])(?:\+\d(?:[ .()-]{0,2}\d){6,14}|\+?\d{7,15})(?![\w])")
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
            mask_text(str(key))[:_MAX_TEXT]: sanitise(item, depth + 1)
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
    return _PHONE.sub(lambda match: _mask_phone(match.group(0)), masked)


def _mask_phone(value: str) -> str:
    digits = "".join(c for c in value if c.isdigit())
    return mask("+" + digits) if value.startswith("+") else "***"


def _mask_address(value: str) -> str:
    masked = mask(value)
    if masked != "***":
        return masked
    local, _, host = value.partition("@")
    return f"{local[:1]}***@{host.lower()}"
