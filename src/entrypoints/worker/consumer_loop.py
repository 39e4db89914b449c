"""The consumers' loop: one batch per consumer in turn, until stopped.

A delivery is written when the worker records a publication, and that transaction notifies
``consumers_work`` at commit: while nothing is due the loop waits for that hint
(``wait_for_work``) or ``poll_interval``, whichever comes first. A lost database is retried with
capped, jittered backoff; nothing is kept between batches, so a restart (or a SIGKILL) leaves
only leases, which expire.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable
from datetime import timedelta

import attrs

from outbox.application.errors import StoreUnavailable
from outbox.application.events.process_deliveries import ProcessingResult
from outbox.application.ports import Telemetry

MAX_BACKOFF = 10.0


def _add(total: ProcessingResult, batch: ProcessingResult) -> ProcessingResult:
    return ProcessingResult(
        **{
            field.name: getattr(total, field.name) + getattr(batch, field.name)
            for field in attrs.fields(ProcessingResult)
        }
    )


@attrs.define(kw_only=True)
class ConsumerLoop:
    """Runs ``process(consumer)`` for each consumer in turn while any has work.

    With ``drain``, returns once a whole turn claimed nothing. ``stop()`` lets the batch in
    flight finish. A refusal (PermissionDenied, an unknown consumer) is raised: the process
    is misconfigured.
    """

    process: Callable[[str], Awaitable[ProcessingResult]]
    consumers: tuple[str, ...]
    telemetry: Telemetry
    poll_interval: timedelta
    drain: bool = False
    # Returns on a wake-up hint or after its argument's seconds; None: poll only.
    wait_for_work: Callable[[float], Awaitable[None]] | None = None
    totals: dict[str, ProcessingResult] = attrs.field(factory=dict)
    _stopping: asyncio.Event = attrs.field(factory=asyncio.Event, alias="_stopping")

    def stop(self) -> None:
        """Stop claiming; the batch in flight finishes."""
        self._stopping.set()

    async def run(self) -> dict[str, ProcessingResult]:
        """Process until stopped (or drained); each consumer's totals."""
        for consumer in self.consumers:
            self.totals.setdefault(consumer, ProcessingResult())
        if self.wait_for_work is not None and not self.drain:
            await self.wait_for_work(0)  # listen before the first claim: no hint falls between
        failures = 0
        while not self._stopping.is_set():
            busy = False
            try:
                for consumer in self.consumers:
                    if self._stopping.is_set():
                        break
                    batch = await self.process(consumer)
                    self.totals[consumer] = _add(self.totals[consumer], batch)
                    busy = busy or batch.claimed > 0
                failures = 0
            except StoreUnavailable as error:
                failures += 1
                delay = min(MAX_BACKOFF, 0.5 * 2**failures) * (0.5 + random.random() / 2)  # noqa: S311
                self.telemetry.event(
                    "consumer.store_unavailable", level="warning", code=error.code, retry_in=delay
                )
                await self._wait(delay)
                continue
            if not busy:
                if self.drain:
                    break
                await self._idle(self.poll_interval.total_seconds())
        return self.totals

    async def _idle(self, seconds: float) -> None:
        """Until a wake-up hint, ``stop()`` or ``seconds``, whichever comes first."""
        if self.wait_for_work is None:
            await self._wait(seconds)
            return
        hint = asyncio.ensure_future(self.wait_for_work(seconds))
        stopping = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait((hint, stopping), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (hint, stopping):
                task.cancel()
            await asyncio.gather(hint, stopping, return_exceptions=True)

    async def _wait(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), timeout=seconds)
