"""PausedProviders in memory: the names staff paused, and how often they were read; the same
names read through the staff gate (PausedProviderReads)."""

from __future__ import annotations

import attrs

from outbox.application.staff import StaffActor


@attrs.define
class InMemoryPausedProviders:
    """The paused names as a set a test changes; ``reads`` counts the worker's reads."""

    names: set[str] = attrs.field(factory=set)
    reads: int = 0

    async def paused(self) -> frozenset[str]:
        """The names paused now."""
        self.reads += 1
        return frozenset(self.names)

    async def paused_providers(self, *, actor: StaffActor | None) -> frozenset[str]:
        """The names paused now, as staff read them (every actor may)."""
        del actor
        return frozenset(self.names)
