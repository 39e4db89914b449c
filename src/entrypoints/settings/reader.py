"""The one reader of the environment: each kind of value is parsed here and nowhere else.

Every error is a SettingsError that names the variable and says what is wrong with it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from datetime import timedelta
from email.utils import parseaddr
from pathlib import Path
from typing import TypeVar

from domain.destinations import is_email

PREFIX = "OUTBOX_"
_T = TypeVar("_T")
_E = TypeVar("_E", bound=enum.Enum)
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
_HIGHEST_PORT = 65535


class SettingsError(Exception):
    """A variable is missing or invalid; the message names it and says what is wrong."""

    def __init__(self, variable: str, problem: str) -> None:
        super().__init__(f"{variable}: {problem}")
        self.variable = variable
        self.problem = problem


class EnvironmentReader:
    """Reads ``OUTBOX_*`` variables (and, through ``foreign``, a few others such as ``AWS_*``).

    Names are given without the prefix. A variable that is unset or blank takes its default.
    ``strict`` (staging and production) makes the checks that only matter outside
    development, such as https-only provider URLs.
    """

    def __init__(self, environ: Mapping[str, str], *, strict: bool = False) -> None:
        # Only the variables this service reads are kept: the rest of the process
        # environment (other programs' secrets) never enters the settings.
        self._environ = {
            key: value for key, value in environ.items() if key.startswith((PREFIX, "AWS_"))
        }
        self.strict = strict

    def foreign(self, name: str) -> str | None:
        """A variable outside our prefix (``AWS_REGION``…), or None when unset or blank."""
        return self._environ.get(name, "").strip() or None

    def raw(self, name: str) -> str | None:
        """``OUTBOX_<name>`` stripped, or None when unset or blank."""
        return self.foreign(PREFIX + name)

    def text(self, name: str, default: str) -> str:
        """The text, or ``default``."""
        return self.raw(name) or default

    def required(self, name: str, why: str = "") -> str:
        """The text; raises SettingsError ``required<why>`` when unset."""
        value = self.raw(name)
        if value is None:
            raise SettingsError(PREFIX + name, f"required{why}")
        return value

    def parse(self, name: str, default: _T, parse: Callable[[str], _T], expected: str) -> _T:
        """``parse(value)``, or ``default``; a ValueError becomes ``expected <expected>``."""
        value = self.raw(name)
        if value is None:
            return default
        try:
            return parse(value)
        except ValueError:
            raise SettingsError(PREFIX + name, f"expected {expected}, got {value!r}") from None

    def integer(
        self, name: str, default: int, *, minimum: int = 1, maximum: int | None = None
    ) -> int:
        """A whole number within ``minimum`` and ``maximum``."""
        number = self.parse(name, default, int, "an integer")
        if number < minimum:
            raise SettingsError(PREFIX + name, f"must be at least {minimum}, got {number}")
        if maximum is not None and number > maximum:
            raise SettingsError(PREFIX + name, f"must be at most {maximum}, got {number}")
        return number

    def port(self, name: str, default: int, *, allow_zero: bool = False) -> int:
        """A TCP port number; 0 (any free port, or off) only with ``allow_zero``."""
        lowest = 0 if allow_zero else 1
        number = self.parse(name, default, int, "a port number")
        if not lowest <= number <= _HIGHEST_PORT:
            raise SettingsError(
                PREFIX + name, f"expected a port number ({lowest}-{_HIGHEST_PORT}), got {number}"
            )
        return number

    def seconds(
        self, name: str, default: float | timedelta, *, minimum: float = 0.001
    ) -> timedelta:
        """A duration given in (possibly fractional) seconds, at least ``minimum``."""
        fallback = default.total_seconds() if isinstance(default, timedelta) else default
        number = self.parse(name, fallback, float, "a number of seconds")
        if number < minimum:
            raise SettingsError(PREFIX + name, f"must be at least {minimum} seconds, got {number}")
        return timedelta(seconds=number)

    def days(self, name: str, default: int) -> timedelta:
        """A duration given in whole days, at least one."""
        return timedelta(days=self.integer(name, default))

    def seconds_list(self, name: str, default: tuple[timedelta, ...]) -> tuple[timedelta, ...]:
        """Comma-separated positive seconds, in order (a retry schedule)."""
        return self.parse(
            name,
            default,
            _parse_seconds_list,
            "comma-separated positive seconds, e.g. 5,30,120,600,1800",
        )

    def flag(self, name: str, *, default: bool) -> bool:
        """true/false, yes/no, on/off or 1/0, in any case."""
        return self.parse(name, default, _parse_bool, "true or false")

    def choice(self, name: str, default: _E, kind: type[_E]) -> _E:
        """One of the enum's values, in any case."""
        allowed = ", ".join(str(member.value) for member in kind)
        return self.parse(name, default, lambda v: kind(v.lower()), f"one of {allowed}")

    def url(self, name: str, default: str | None = None, *, https_only: bool = False) -> str | None:
        """An http(s) URL without its trailing slash; https only when asked to be and strict."""
        value = self.raw(name)
        if value is None:
            return default
        if not value.startswith(("https://", "http://")):
            raise SettingsError(PREFIX + name, "expected an http(s):// URL")
        if https_only and self.strict and not value.startswith("https://"):
            raise SettingsError(PREFIX + name, "must be https:// outside development")
        return value.rstrip("/")

    def address(self, name: str, why: str = "") -> str:
        """A required email address, bare or with a display name (``Name <a@b.example>``)."""
        value = self.required(name, why)
        if not is_email(parseaddr(value)[1]):
            raise SettingsError(PREFIX + name, "expected an email address, e.g. Name <a@b.example>")
        return value

    def path(self, name: str) -> Path | None:
        """A filesystem path, or None."""
        value = self.raw(name)
        return Path(value) if value else None

    def existing_file(self, name: str) -> Path | None:
        """A path that must name an existing file, or None."""
        path = self.path(name)
        if path is not None and not path.is_file():
            raise SettingsError(PREFIX + name, f"no such file: {path}")
        return path


def _parse_bool(value: str) -> bool:
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(value)


def _parse_seconds_list(value: str) -> tuple[timedelta, ...]:
    steps = tuple(timedelta(seconds=float(part)) for part in value.split(","))
    if not steps or any(step <= timedelta(0) for step in steps):
        raise ValueError(value)
    return steps
