"""Every bad setting a process would meet, named in one round before it starts.

Settings are read whole at start (one line per bad variable), but a process meets two more
kinds of configuration later: the database URL each of its pools reads, and the seal keys.
Outside development a missing URL or a bad key stopped the process at the moment it was
reached, so an operator fixed them in rounds (channels, then keys, then the URL). A process
names what it will need here, and ``problems`` lists everything wrong at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import attrs

from outbox.entrypoints.bootstrap.seal_keys import load_keyring
from outbox.entrypoints.settings.reader import PREFIX, SettingsError, SettingsProblems
from outbox.entrypoints.settings.tree import DatabaseSettings, Settings

# Each pool's own URL variable, and what serves when it is unset (OUTBOX_DATABASE_URL).
URLS: dict[str, Callable[[DatabaseSettings], str | None]] = {
    "DATABASE_URL": lambda d: d.url,
    "WORKER_DATABASE_URL": lambda d: d.worker_url or d.url,
    "CONSUMERS_DATABASE_URL": lambda d: d.consumers_url or d.url,
    "ADMIN_DATABASE_URL": lambda d: d.admin_url or d.url,
}


def missing_url(settings: Settings, variable: str) -> SettingsError:
    """The error for ``variable`` unset outside development (OUTBOX_DATABASE_URL, its
    fallback, unset too): only development starts an embedded PostgreSQL."""
    wanted = PREFIX + variable
    if variable != "DATABASE_URL":
        wanted += f" (or {PREFIX}DATABASE_URL)"
    return SettingsError(
        PREFIX + variable,
        f"required when OUTBOX_ENV is {settings.environment.value}: set {wanted} to a login"
        " of this process's job; only development starts an embedded PostgreSQL",
    )


@attrs.frozen(kw_only=True)
class Needs:
    """What a process will reach once it runs: the URL variables of its pools (keys of
    URLS) and whether it opens sealed secrets."""

    databases: tuple[str, ...] = ()
    seal_keys: bool = False

    def problems(self, settings: Settings) -> list[SettingsError]:
        """Every one of them that is missing or bad, in that order."""
        found: list[SettingsError] = []
        if not settings.is_development:
            found += [
                missing_url(settings, variable)
                for variable in self.databases
                if URLS[variable](settings.database) is None
            ]
        if self.seal_keys:
            try:
                load_keyring(settings, warn=_quiet)
            except SettingsError as error:
                found.append(error)
        return found


def _quiet(_: str) -> None:
    """The keys' warnings are said when the process loads them for real."""


def problems_of(error: SettingsError) -> Iterable[SettingsError]:
    """The single problems an error stands for (SettingsProblems holds several)."""
    return error.problems if isinstance(error, SettingsProblems) else (error,)
