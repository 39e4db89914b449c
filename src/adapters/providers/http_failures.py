"""How the HTTP-API providers classify transport errors, statuses and retry hints."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from datetime import datetime

import httpx

from outbox.domain.delivery.failures import DeliveryFailure, FailureClass
from outbox.domain.delivery.retry_after import parse_retry_after

# Raised before a single byte of the request reached the provider: it cannot have acted.
_NOT_SENT = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
    httpx.ProxyError,
    httpx.UnsupportedProtocol,
    httpx.LocalProtocolError,
)
_TOKEN = re.compile(r"[A-Za-z][A-Za-z_]{0,63}", re.ASCII)
_DECIMAL_SECONDS = re.compile(r"[0-9]{1,10}(?:\.[0-9]{1,6})?", re.ASCII)
_MAX_PROVIDER_ID = 255
# How providers word a send they refused as fraud (SMS pumping, toll fraud) or a destination
# they block: a refusal of this one message, never of the account.
_FRAUD_WORDS = ("fraud", "pumping", "blacklist", "blocklist", "blocked", "suspicious")
_EPOCH_SECONDS_FLOOR = 1_000_000_000  # 2001-09-09: no rate-limit window is that long


def failure_for_transport_error(error: httpx.TransportError) -> DeliveryFailure:
    """UNAVAILABLE when the request was never sent, INDETERMINATE when it may have been.

    The code is the httpx error's class name (``ConnectTimeout``, ``ReadTimeout``…),
    never its text, which can carry URLs and server output.
    """
    failure_class = (
        FailureClass.UNAVAILABLE if isinstance(error, _NOT_SENT) else FailureClass.INDETERMINATE
    )
    return DeliveryFailure(failure_class=failure_class, code=type(error).__name__)


def failure_for_status(
    status: int, *, code: str | None = None, retry_after: datetime | None = None
) -> DeliveryFailure:
    """The default reading of a refusal: 429 THROTTLED, 401/403 PROVIDER_SUSPENDED, 408/5xx
    UNAVAILABLE, any other 4xx REJECTED.

    A refused credential stops every message of the account, so it pauses the provider
    instead of dead-lettering messages one by one. Redirects and other unexpected
    statuses count as UNAVAILABLE: the request was not accepted and nothing says it
    never will be.
    """
    code = code or str(status)
    if status == 429:
        return DeliveryFailure(
            failure_class=FailureClass.THROTTLED, code=code, retry_after=retry_after
        )
    if status in {401, 403}:
        return DeliveryFailure(failure_class=FailureClass.PROVIDER_SUSPENDED, code=code)
    if status == 408 or status >= 500:
        return DeliveryFailure(failure_class=FailureClass.UNAVAILABLE, code=code)
    if 400 <= status < 500:
        return DeliveryFailure(failure_class=FailureClass.REJECTED, code=code)
    return DeliveryFailure(failure_class=FailureClass.UNAVAILABLE, code=code)


def parse_delay(value: object, now: datetime) -> datetime | None:
    """A ``Retry-After`` value, or a number of seconds (decimals rounded up), as a time.

    Unusable values (malformed, past, over a day away) give None, like the domain parser.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        if not math.isfinite(value) or value < 0:
            return None
        value = str(math.ceil(value))
    if not isinstance(value, str):
        return None
    when = parse_retry_after(value, now)
    if when is None and _DECIMAL_SECONDS.fullmatch(value.strip()):
        when = parse_retry_after(str(math.ceil(float(value))), now)
    return when


def parse_rate_limit_reset(value: str | None, now: datetime) -> datetime | None:
    """An ``X-RateLimit-Reset`` value as a time: a Unix timestamp, or seconds from now.

    Providers document both readings; a number this large can only be a timestamp.
    """
    if value is None or not value.strip().isdigit():
        return None
    number = int(value.strip())
    if number < _EPOCH_SECONDS_FLOOR:
        return parse_retry_after(str(number), now)
    delay = number - now.timestamp()
    if delay <= 0:
        return None
    return parse_retry_after(str(math.ceil(delay)), now)


def names_fraud_block(body: Mapping[str, object]) -> bool:
    """Whether a refusal's code or message says the provider blocked the send as fraud or
    blocks its destination: REJECTED (never retried), not a reason to pause the provider."""
    for key in ("code", "message", "error", "reason"):
        value = body.get(key)
        if isinstance(value, str) and any(word in value.lower() for word in _FRAUD_WORDS):
            return True
    return False


def json_object(response: httpx.Response) -> Mapping[str, object]:
    """The response body as a JSON object, or an empty mapping when it is anything else."""
    try:
        body = json.loads(response.content)
    except (ValueError, UnicodeDecodeError):
        return {}
    return body if isinstance(body, dict) else {}


def safe_token(value: object) -> str | None:
    """``value`` if it is a short machine token (letters and ``_``), else None.

    Provider error codes go into failure codes only through this check, so free text
    from a provider (which may echo an address, a number or the message) never does;
    digits are refused outright because one-time codes are digits.
    """
    if isinstance(value, str) and _TOKEN.fullmatch(value):
        return value
    return None


def provider_message_id(value: object) -> str:
    """A provider's message id (a string or a number) as text, or "" when absent."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        return ""
    return str(value)[:_MAX_PROVIDER_ID]
