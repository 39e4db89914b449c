"""Runs a sweep on a fixed interval inside a long-running process."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta

import attrs

from outbox.application.ports import Telemetry


@attrs.frozen(kw_only=True)
class Every:
    """Calls ``job`` every ``interval`` until cancelled; one failed run never stops the next."""

    name: str
    interval: timedelta
    job: Callable[[], Awaitable[int]]
    telemetry: Telemetry

    async def run(self) -> None:
        """Loop forever; cancel the task to stop (CancelledError is never swallowed)."""
        while True:
            try:
                await self.job()
            except Exception as error:  # noqa: BLE001 - a failed tick is logged; the next runs
                self.telemetry.event(
                    "sweep.failed",
                    level="error",
                    sweep=self.name,
                    error=type(error).__name__,
                    code=str(getattr(error, "code", "") or ""),
                )
            await asyncio.sleep(self.interval.total_seconds())
