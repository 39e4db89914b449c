"""The last line of defence before a log line is rendered: mask secrets by key and by shape.

By key: values of secret-bearing keys (password, token, secret, key, envelope…) are
replaced, destination keys are masked with ``outbox.domain.destinations.mask``, and ``code``
keys keep only values shaped like an error code (``550``, ``40P01``, ``Throttling``).
By shape, in every string: the password of a URL (``scheme://user:password@``), bearer and
basic credentials, ``key=value`` secrets, ``v1.``
envelopes, URL fragments (where links carry tokens), email addresses, E.164 numbers,
six-digit codes and long token-like strings.

It cannot know every secret; application code must still never log one.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

from outbox.domain.destinations import mask

REDACTED = "[REDACTED]"
MAX_TEXT = 4096  # longer strings are cut: a log line is not a dump, and scrubbing stays cheap
_MASK = "***"

# Matched anywhere in a lower-cased key.
_SECRET_WORDS = (
    "password",
    "passwd",
    "secret",
    "token",
    "authorization",
    "plaintext",
    "envelope",
    "cookie",
    "credential",
    "apikey",
    "api_key",
    "private",
)
# Matched as a whole ``_``/``.``/``-`` separated segment of a key.
_SECRET_SEGMENTS = frozenset({"key", "otp", "pin", "pwd"})
_DESTINATION_SEGMENTS = frozenset(
    {"destination", "recipient", "email", "phone", "identifier", "to"}
)
_FIRST = ("timestamp", "level", "logger", "event")
_SAFE_KEYS = frozenset({*_FIRST, "key_id"})
_SEPARATORS = re.compile(r"[._-]")

# What an error code looks like: HTTP/SMTP statuses (``550``, ``401:unauthorized``),
# enhanced SMTP codes, SQLSTATEs, and names: ``Throttling``, ``timeout``, ``no_provider``
# (letters, at least one lower-case) or ``PROVIDER_SUSPENDED``. A one-time code (digits
# by default) does not.
_ERROR_CODE = re.compile(
    r"\d{3}(?::[A-Za-z_]+)?|\d\.\d{1,3}\.\d{1,3}|[0-9A-Z]{5}"
    r"|(?=[A-Z_.:-]*[a-z])[A-Za-z]+(?:[_.:-][A-Za-z]+)*|[A-Z]+(?:_[A-Z]+)+",
    re.ASCII,
)
# Strings that cannot hold anything below: words, UUIDs, ISO timestamps.
_HARMLESS = re.compile(
    r"[A-Za-z_.:-]{0,200}"
    r"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"|\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?",
    re.ASCII,
)
_DIGIT = re.compile(r"\d")
_LETTER = re.compile(r"[A-Za-z]")
_UUID = re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")
_SCRUB = re.compile(
    r"(?P<userinfo>(?<=://)[^/\s:@]*:[^\s@]+@)"
    r"|(?P<bearer>(?i:\b(?:bearer|basic))\s+[A-Za-z0-9._~+/=-]{6,})"
    r"|(?P<assign>(?i:\b(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|otp))"
    r"[\"']?\s*[=:]\s*[\"']?)[^\s\"'&,;]+"
    r"|(?P<envelope>\bv1\.[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+){2,})"
    r"|(?P<fragment>(?<=[\w/.=-])\#[^\s\"'<>]+)"
    r"|(?P<email>(?<![A-Za-z0-9.!$%&'*+/=?^_`{|}~-])[A-Za-z0-9.!$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+)"
    r"|(?P<phone>(?<![\w+])\+[1-9]\d{6,14}(?!\d))"
    r"|(?P<long>(?<![\w-])[A-Za-z0-9_-]{32,}(?![\w-]))"
    r"|(?P<code>(?<![\w.-])\d{6}(?![\w-]))"
)


def redact_event(_logger: object, _method: str, event_dict: MutableMapping[str, Any]) -> Any:
    """A structlog processor: return ``event_dict`` with every value redacted.

    The standard keys come first, so raw lines read well.
    """
    ordered = {key: event_dict[key] for key in _FIRST if key in event_dict}
    ordered.update(event_dict)
    return {key: _by_key(key, value) for key, value in ordered.items()}


def redact_text(text: str) -> str:
    """Scrub secrets and personal data that have a recognisable shape out of ``text``."""
    if len(text) > MAX_TEXT:
        text = text[:MAX_TEXT] + "…[truncated]"
    if _HARMLESS.fullmatch(text):
        return text
    return _SCRUB.sub(_replace, text)


def _by_key(key: str, value: Any) -> Any:
    if value is None or isinstance(value, bool):
        return value
    kind = _kind_of(key)
    if kind is _Kind.SECRET:
        return REDACTED
    if kind is _Kind.CODE:
        return _error_code(value)
    if kind is _Kind.DESTINATION and isinstance(value, str):
        return redact_text(value if _MASK in value else mask(value))
    return _value(key, value)


class _Kind(enum.Enum):
    """How a key's value is treated."""

    SECRET = enum.auto()
    CODE = enum.auto()
    DESTINATION = enum.auto()
    PLAIN = enum.auto()


@functools.lru_cache(maxsize=4096)  # keys come from code: a small set, seen on every line
def _kind_of(key: str) -> _Kind:
    lowered = key.lower()
    if lowered in _SAFE_KEYS:
        return _Kind.PLAIN
    segments = _SEPARATORS.split(lowered)
    if any(word in lowered for word in _SECRET_WORDS) or not _SECRET_SEGMENTS.isdisjoint(segments):
        return _Kind.SECRET
    if segments[-1] == "code":
        return _Kind.CODE
    if segments[-1] in _DESTINATION_SEGMENTS:
        return _Kind.DESTINATION
    return _Kind.PLAIN


def _value(key: str, value: Any) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, Mapping):
        return {str(k): _by_key(str(k), v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_by_key(key, item) for item in value]
    if isinstance(value, BaseException):
        return type(value).__name__  # never the message
    return redact_text(str(value))


def _error_code(value: Any) -> Any:
    if isinstance(value, str | int) and (value == "" or _ERROR_CODE.fullmatch(str(value))):
        return value
    return REDACTED


_FIXED = {"envelope": f"v1.{REDACTED}", "fragment": f"#{REDACTED}", "code": REDACTED}


# Kinds whose first part stays readable: the URL's user, the scheme, the variable name.
_KEEP_PREFIX: dict[str, Callable[[re.Match[str]], str]] = {
    "userinfo": lambda m: m.group().split(":", 1)[0] + ":",
    "bearer": lambda m: m.group().split()[0] + " ",
    "assign": lambda m: m.group("assign"),
}


def _replace(match: re.Match[str]) -> str:
    kind = match.lastgroup or ""
    text = match.group()
    if kind in _FIXED:
        return _FIXED[kind]
    if kind in _KEEP_PREFIX:
        return _KEEP_PREFIX[kind](match) + REDACTED + ("@" if kind == "userinfo" else "")
    if kind in {"email", "phone"}:
        return mask(text)
    if _UUID.fullmatch(text) or not (_DIGIT.search(text) and _LETTER.search(text)):
        return text  # a long id, word or number, not a token
    return REDACTED
