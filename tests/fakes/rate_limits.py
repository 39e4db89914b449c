"""A send quota that counts what it grants and can be held shut."""

from __future__ import annotations

import asyncio

import attrs


@attrs.define
class CountingRateLimit:
    """SendRateLimit that grants at once, or never while ``shut``; ``granted`` counts grants."""

    shut: bool = False
    granted: int = 0
    _never: asyncio.Event = attrs.field(factory=asyncio.Event, init=False, repr=False)

    async def acquire(self) -> None:
        """Grant one send, or wait for ever while shut (the caller bounds the wait)."""
        if self.shut:
            await self._never.wait()
        self.granted += 1
