"""PausedProviders in memory: the names staff paused, and how often they were read."""

from __future__ import annotations

import attrs


@attrs.define
class InMemoryPausedProviders:
    """The paused names as a set a test changes; ``reads`` counts the worker's reads."""

    names: set[str] = attrs.field(factory=set)
    reads: int = 0

    async def paused(self) -> frozenset[str]:
        """The names paused now."""
        self.reads += 1
        return frozenset(self.names)
