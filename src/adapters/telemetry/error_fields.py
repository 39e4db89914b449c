"""Exceptions in log lines become their name and code: never a message, a traceback or locals.

Exception messages and tracebacks (with locals) are where codes, tokens and addresses
leak from (a provider error quoting the request, a ``KeyError`` on a destination), so
this processor replaces structlog's exception rendering altogether.
"""

from __future__ import annotations

import sys
from collections.abc import MutableMapping
from typing import Any

# Rendered exception text some other processor or caller may have put in the event.
_RENDERED = ("exception", "exc_text", "stack", "traceback")
# Attributes that hold a short machine code on common exceptions (psycopg, ours, smtplib, OS).
_CODE_ATTRIBUTES = ("sqlstate", "code", "smtp_code", "errno")


def exception_as_fields(
    _logger: object, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """A structlog processor: turn ``exc_info`` into ``error`` and ``error_code`` fields."""
    exc_info = event_dict.pop("exc_info", None)
    event_dict.pop("stack_info", None)
    for key in _RENDERED:
        event_dict.pop(key, None)
    error = _exception(exc_info)
    if error is None:
        return event_dict
    event_dict.setdefault("error", type(error).__name__)
    code = error_code(error)
    if code:
        event_dict.setdefault("error_code", code)
    cause = error.__cause__ or error.__context__
    if cause is not None:
        event_dict.setdefault("error_cause", type(cause).__name__)
    return event_dict


def error_code(error: BaseException) -> str:
    """The short machine code an exception carries (SQLSTATE, provider code, errno), or ""."""
    failure = getattr(error, "failure", None)
    for holder, attribute in [(failure, "code"), *((error, a) for a in _CODE_ATTRIBUTES)]:
        value = getattr(holder, attribute, None) if holder is not None else None
        if isinstance(value, str | int) and not isinstance(value, bool) and value != "":
            return str(value)
    return ""


def _exception(exc_info: object) -> BaseException | None:
    if exc_info is None or exc_info is False:
        return None
    if isinstance(exc_info, BaseException):
        return exc_info
    if isinstance(exc_info, tuple) and len(exc_info) == 3:
        return exc_info[1] if isinstance(exc_info[1], BaseException) else None
    return sys.exc_info()[1]  # exc_info=True: the exception being handled
