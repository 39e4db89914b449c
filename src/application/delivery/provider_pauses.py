"""Operator pauses of providers, as the worker sees them.

Staff pause a provider in the database; every worker reads the paused names at most once per
``refresh`` (at the start of a batch) and releases the messages for a paused provider back to
pending without spending an attempt, to be tried again after ``release_for``. Unlike the
circuit breaker (provider_breaker.py), no probe is sent: the pause lasts until staff resume.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Protocol

import attrs

from outbox.application.errors import StoreUnavailable

DEFAULT_REFRESH = timedelta(seconds=2)
DEFAULT_RELEASE = timedelta(seconds=10)


class PausedProviders(Protocol):
    """The names of the providers staff paused."""

    async def paused(self) -> frozenset[str]:
        """Every paused provider's name; raises StoreUnavailable for a transient error."""
        ...


@attrs.define
class ProviderPauseBoard:
    """The paused names as last read, refreshed at most once per ``refresh``."""

    source: PausedProviders
    refresh: timedelta = DEFAULT_REFRESH
    release_for: timedelta = DEFAULT_RELEASE
    _names: frozenset[str] = attrs.field(factory=frozenset, alias="_names")
    _read_at: datetime | None = attrs.field(default=None, alias="_read_at")

    async def refresh_if_due(self, now: datetime) -> None:
        """Read the paused names again if the last read is older than ``refresh``.

        A failed read keeps the names last read (the claim that follows fails the same way).
        """
        if self._read_at is not None and now - self._read_at < self.refresh:
            return
        try:
            self._names = await self.source.paused()
        except StoreUnavailable:
            return
        self._read_at = now

    def is_paused(self, provider: str) -> bool:
        """Whether ``provider`` was paused at the last read."""
        return provider in self._names
