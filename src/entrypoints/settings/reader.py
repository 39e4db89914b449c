"""The one reader of the environment: each kind of value is parsed here and nowhere else.

Every error is a SettingsError that names the variable and says what is wrong with it. A
reader made with ``collect=True`` (what ``load_settings`` uses) does not stop at the first
bad variable: it notes each problem, carries on with the default, and ``raise_problems``
then reports them all at once, so an operator fixes a deployment in one round.

Why attrs and this reader rather than pydantic-settings: the tree is plain attrs classes,
like every other value in the code base; the rules that matter here (strict checks only
outside development, a value quoted in an error never showing a secret, one group of
variables read only by processes that send) are a few lines each in this reader, and
pydantic-settings would add a second model system and its own error texts to translate.
"""

from __future__ import annotations

import enum
import ipaddress
import math
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from email.utils import parseaddr
from pathlib import Path
from typing import TypeVar

from outbox.domain.destinations import is_email

PREFIX = "OUTBOX_"
_T = TypeVar("_T")
_E = TypeVar("_E", bound=enum.Enum)
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
_HIGHEST_PORT = 65535
# A duration longer than this is a typo (and ``timedelta`` overflows not far beyond).
MAX_SECONDS = 10 * 365 * 24 * 3600
MAX_DAYS = 100 * 365
MASKED = "***"
# Variables whose value is never quoted back, whatever is wrong with it.
_SECRET_NAME = re.compile(r"PASSWORD|SECRET|TOKEN|KEY", re.IGNORECASE)
_CONNINFO_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)
_SCHEME = re.compile(r"[A-Za-z][\w+.-]*:/*")


class SettingsError(Exception):
    """A variable is missing or invalid; the message names it and says what is wrong."""

    def __init__(self, variable: str, problem: str) -> None:
        super().__init__(f"{variable}: {problem}")
        self.variable = variable
        self.problem = problem


class SettingsProblems(SettingsError):
    """Several variables are wrong: one line each, in the order they were read.

    ``variable`` and ``problem`` are the first one's, so code that expects a single
    SettingsError still reads a true answer.
    """

    def __init__(self, problems: Iterable[SettingsError]) -> None:
        self.problems = tuple(problems)
        first = self.problems[0]
        super().__init__(first.variable, first.problem)
        self.args = ("\n".join(f"{p.variable}: {p.problem}" for p in self.problems),)

    def __str__(self) -> str:
        return str(self.args[0])


def mask_secrets(value: str) -> str:
    """``value`` with the password of a connection URL or conninfo string replaced by ***.

    It works on malformed values too (that is when they are quoted back): everything
    between the user name's colon and the last ``@`` is masked.
    """
    value = _CONNINFO_PASSWORD.sub(lambda m: m.group(1) + MASKED, value)
    at = value.rfind("@")
    if at < 0:
        return value
    scheme = _SCHEME.match(value)
    start = scheme.end() if scheme else 0
    colon = value.find(":", start, at)
    if colon < 0:
        return value
    return f"{value[: colon + 1]}{MASKED}{value[at:]}"


class EnvironmentReader:
    """Reads ``OUTBOX_*`` variables (and, through ``foreign``, a few others such as ``AWS_*``).

    Names are given without the prefix. A variable that is unset or blank takes its default.
    ``strict`` (staging and production) makes the checks that only matter outside
    development, such as https-only provider URLs.
    """

    def __init__(
        self, environ: Mapping[str, str], *, strict: bool = False, collect: bool = False
    ) -> None:
        # Only the variables this service reads are kept: the rest of the process
        # environment (other programs' secrets) never enters the settings.
        self._environ = {
            key: value for key, value in environ.items() if key.startswith((PREFIX, "AWS_"))
        }
        self.strict = strict
        self._problems: list[SettingsError] | None = [] if collect else None

    def refuse(self, name: str, problem: str, fallback: _T) -> _T:
        """Report ``OUTBOX_<name>``: raise, or (collecting) note it and return ``fallback``."""
        return self.refuse_variable(PREFIX + name, problem, fallback)

    def refuse_variable(self, variable: str, problem: str, fallback: _T) -> _T:
        """``refuse`` for a variable given by its full name."""
        error = SettingsError(variable, problem)
        if self._problems is None:
            raise error
        self._problems.append(error)
        return fallback

    def section(self, read: Callable[[], _T], fallback: _T) -> _T:
        """``read()``; when collecting, a SettingsError it raises is noted and ``fallback`` used.

        For groups whose checks raise (a required variable has no default to go on with).
        """
        if self._problems is None:
            return read()
        try:
            return read()
        except SettingsProblems as problems:
            self._problems.extend(problems.problems)
        except SettingsError as error:
            self._problems.append(error)
        return fallback

    def raise_problems(self) -> None:
        """Raise SettingsProblems naming every variable noted so far, if any."""
        if self._problems:
            raise SettingsProblems(self._problems)

    def shown(self, name: str, value: str) -> str:
        """``value`` as an error may quote it: never a secret variable's, never a password."""
        return repr(MASKED if _SECRET_NAME.search(name) else mask_secrets(value))

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
        """The text; ``required<why>`` when unset (collecting: noted, and "" returned)."""
        value = self.raw(name)
        if value is None:
            return self.refuse(name, f"required{why}", "")
        return value

    def parse(self, name: str, default: _T, parse: Callable[[str], _T], expected: str) -> _T:
        """``parse(value)``, or ``default``; a ValueError becomes ``expected <expected>``."""
        value = self.raw(name)
        if value is None:
            return default
        try:
            return parse(value)
        except (ValueError, OverflowError):
            return self.refuse(name, f"expected {expected}, got {self.shown(name, value)}", default)

    def integer(
        self, name: str, default: int, *, minimum: int = 1, maximum: int | None = None
    ) -> int:
        """A whole number within ``minimum`` and ``maximum``."""
        number = self.parse(name, default, int, "an integer")
        if number < minimum:
            return self.refuse(name, f"must be at least {minimum}, got {number}", default)
        if maximum is not None and number > maximum:
            return self.refuse(name, f"must be at most {maximum}, got {number}", default)
        return number

    def port(self, name: str, default: int, *, allow_zero: bool = False) -> int:
        """A TCP port number; 0 (any free port, or off) only with ``allow_zero``."""
        lowest = 0 if allow_zero else 1
        number = self.parse(name, default, int, "a port number")
        if not lowest <= number <= _HIGHEST_PORT:
            return self.refuse(
                name, f"expected a port number ({lowest}-{_HIGHEST_PORT}), got {number}", default
            )
        return number

    def seconds(
        self,
        name: str,
        default: float | timedelta,
        *,
        minimum: float = 0.001,
        maximum: float = MAX_SECONDS,
    ) -> timedelta:
        """A finite duration in (possibly fractional) seconds, from ``minimum`` to ``maximum``."""
        fallback = default.total_seconds() if isinstance(default, timedelta) else default
        number = self.parse(name, fallback, _finite, "a number of seconds")
        if number < minimum:
            problem = f"must be at least {minimum} seconds, got {number}"
            number = self.refuse(name, problem, fallback)
        elif number > maximum:
            problem = f"must be at most {maximum} seconds, got {number}"
            number = self.refuse(name, problem, fallback)
        return timedelta(seconds=number)

    def days(self, name: str, default: int) -> timedelta:
        """A duration given in whole days, at least one (and at most a century)."""
        return timedelta(days=self.integer(name, default, maximum=MAX_DAYS))

    def seconds_list(self, name: str, default: tuple[timedelta, ...]) -> tuple[timedelta, ...]:
        """Comma-separated positive seconds, in order (a retry schedule)."""
        return self.parse(
            name,
            default,
            _parse_seconds_list,
            "comma-separated positive seconds, e.g. 5,30,120,600,1800",
        )

    def networks(self, name: str) -> tuple[str, ...]:
        """Comma-separated IP addresses or CIDR networks, normalised; none when unset."""
        return self.parse(
            name, (), _parse_networks, "comma-separated IP addresses or networks, e.g. 10.0.0.0/8"
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
            return self.refuse(name, "expected an http(s):// URL", default)
        if https_only and self.strict and not value.startswith("https://"):
            return self.refuse(name, "must be https:// outside development", default)
        return value.rstrip("/")

    def address(self, name: str, why: str = "") -> str:
        """A required email address, bare or with a display name (``Name <a@b.example>``)."""
        value = self.required(name, why)
        if value and not is_email(parseaddr(value)[1]):
            problem = "expected an email address, e.g. Name <a@b.example>"
            return self.refuse(name, problem, value)
        return value

    def directory(self, name: str) -> Path | None:
        """A path that must name an existing, readable directory, or None."""
        path = self.path(name)
        if path is not None and not path.is_dir():
            return self.refuse(name, f"no such directory: {path}", None)
        return path

    def path(self, name: str) -> Path | None:
        """A filesystem path, or None."""
        value = self.raw(name)
        return Path(value) if value else None

    def existing_file(self, name: str) -> Path | None:
        """A path that must name an existing file, or None."""
        path = self.path(name)
        if path is not None and not path.is_file():
            return self.refuse(name, f"no such file: {path}", None)
        return path


def _finite(value: str) -> float:
    number = float(value)
    if not math.isfinite(number):  # inf and nan parse, and would crash timedelta
        raise ValueError(value)
    return number


def _parse_bool(value: str) -> bool:
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(value)


def _parse_networks(value: str) -> tuple[str, ...]:
    parts = [part.strip() for part in value.split(",")]
    if not all(parts):
        raise ValueError(value)
    return tuple(str(ipaddress.ip_network(part, strict=False)) for part in parts)


def _parse_seconds_list(value: str) -> tuple[timedelta, ...]:
    steps = tuple(timedelta(seconds=float(part)) for part in value.split(","))
    if not steps or any(step <= timedelta(0) for step in steps):
        raise ValueError(value)
    return steps
