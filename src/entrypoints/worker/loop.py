"""The worker loop: claim and dispatch until stopped; wake on NOTIFY, poll as a fallback."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Generic, Protocol, TypeVar

import attrs

from outbox.application.errors import StoreUnavailable
from outbox.application.ports import Telemetry

MAX_BACKOFF = 10.0


class BatchResult(attrs.AttrsInstance, Protocol):
    """What one batch of any lane did: counts only, ``claimed`` among them."""

    @property
    def claimed(self) -> int:
        """How many rows the batch claimed; 0 means nothing was due."""
        ...


ResultT = TypeVar("ResultT", bound=BatchResult)


@attrs.define(kw_only=True)
class WorkerLoop(Generic[ResultT]):
    """Runs dispatch batches back to back while there is work, and waits when there is none.

    ``stop()`` stops claiming; the batch in flight finishes and is recorded. A lost
    database is retried with capped, jittered backoff; no state is kept between batches,
    so nothing is half-done after a reconnect.

    ``parallel_batches`` batches run at once, each claiming its own rows (SKIP LOCKED keeps
    them disjoint), so one batch's round trips to the database overlap another's rendering
    and sending. Idle batches share one wait for work.

    One loop serves one lane of the worker (the security outbox or the
    events outbox): ``dispatch`` is that lane's use case and ``totals`` starts at its empty result.

    ``reserved`` is one more batch runner beside those, for what must not wait behind a batch
    in flight (the security lane's high-priority messages): it claims through its own
    dispatch and waits for work on ``wait_for_reserved`` (its own channel) when it has none.
    """

    dispatch: Callable[[], Awaitable[ResultT]]
    wait_for_work: Callable[[float], Awaitable[None]]
    telemetry: Telemetry
    poll_interval: timedelta
    drain: bool = False
    parallel_batches: int = attrs.field(default=1, validator=attrs.validators.ge(1))
    totals: ResultT  # the lane's empty result at first (``BatchTally()``), then the sums
    reserved: Callable[[], Awaitable[ResultT]] | None = None
    wait_for_reserved: Callable[[float], Awaitable[None]] | None = None
    # The reserved runner's batch size. A claim of its that fills it says more is waiting
    # than the slot takes at once: it wakes the idle batches, which claim high priority
    # first, to take the rest (what wakes the slot no longer wakes them). None: never.
    reserved_batch: int | None = None
    _stopping: asyncio.Event = attrs.field(factory=asyncio.Event, alias="_stopping")
    _help: asyncio.Event = attrs.field(factory=asyncio.Event, alias="_help")
    _idling: asyncio.Future[None] | None = attrs.field(default=None, alias="_idling")

    def stop(self) -> None:
        """Stop claiming new batches; the batch in flight is allowed to finish."""
        self._stopping.set()

    @property
    def stopping(self) -> bool:
        """Whether ``stop()`` was called."""
        return self._stopping.is_set()

    async def run(self) -> ResultT:
        """Dispatch until stopped (or, with ``drain``, until nothing is due); return the totals."""
        if self.parallel_batches == 1 and self.reserved is None:
            await self._batches(self.dispatch, self._idle)
            return self.totals
        idle = self._idle if self.parallel_batches == 1 else self._shared_idle
        runs = [
            asyncio.ensure_future(self._batches(self.dispatch, idle))
            for _ in range(self.parallel_batches)
        ]
        if self.reserved is not None:
            wait = self.wait_for_reserved or self.wait_for_work
            runs.append(
                asyncio.ensure_future(
                    self._batches(self.reserved, lambda: self._idle(wait), self._call_for_help)
                )
            )
        try:
            await asyncio.gather(*runs)
        finally:
            waits = [self._idling] if self._idling is not None else []
            for task in [*runs, *waits]:
                task.cancel()
            await asyncio.gather(*runs, *waits, return_exceptions=True)
        return self.totals

    async def _batches(
        self,
        dispatch: Callable[[], Awaitable[ResultT]],
        idle: Callable[[], Awaitable[None]],
        after: Callable[[ResultT], None] | None = None,
    ) -> None:
        failures = 0
        while not self.stopping:
            try:
                result = await dispatch()
            except StoreUnavailable as error:
                if self.drain and error.hint:
                    raise  # a one-shot run cannot wait for an operator: say what to do, and stop
                failures += 1
                delay = min(MAX_BACKOFF, 0.1 * 2**failures) * random.uniform(0.5, 1.0)  # noqa: S311
                self.telemetry.event(
                    "worker.database_unavailable",
                    level="warning",
                    code=error.code,
                    retry_in=round(delay, 3),
                    hint=error.hint or None,
                )
                await self._sleep(delay)
                continue
            if failures:
                self.telemetry.event("worker.database_recovered", after_failures=failures)
                failures = 0
            self.totals = add_counts(self.totals, result)
            if after is not None:
                after(result)
            if result.claimed:
                continue
            if self.drain:
                break
            await idle()

    async def _shared_idle(self) -> None:
        """Idle batches wait together: one wait for work (one listener), all wake with it."""
        if self._idling is None or self._idling.done():
            self._idling = asyncio.ensure_future(self._idle())
        await asyncio.shield(self._idling)

    def _call_for_help(self, result: ResultT) -> None:
        """After a reserved claim: a full one wakes the idle batches (``reserved_batch``)."""
        if self.reserved_batch is not None and result.claimed >= self.reserved_batch:
            self._help.set()

    async def _idle(self, wait: Callable[[float], Awaitable[None]] | None = None) -> None:
        """Wait for a NOTIFY (on ``wait``, the lane's own by default), the poll interval, or
        stop, whichever comes first; the batches (the lane's own wait) also for a full
        reserved claim."""
        seconds = self.poll_interval.total_seconds()
        waiter = asyncio.ensure_future((wait or self.wait_for_work)(seconds))
        stopper = asyncio.ensure_future(self._stopping.wait())
        tasks = {waiter, stopper}
        if wait is None:
            tasks.add(asyncio.ensure_future(self._help.wait()))
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            # A failed wait (the listening connection dropped) is not fatal: we poll anyway.
            await asyncio.gather(*tasks, return_exceptions=True)
            if wait is None:
                self._help.clear()

    async def _sleep(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self._stopping.wait(), seconds)
        except TimeoutError:
            return


_Counts = TypeVar("_Counts", bound=attrs.AttrsInstance)


def add_counts(total: _Counts, batch: _Counts) -> _Counts:
    """``total`` plus ``batch``, field by field (a lane's, a consumer's or an inbox's counts)."""
    return type(total)(
        **{
            field.name: getattr(total, field.name) + getattr(batch, field.name)
            for field in attrs.fields(type(total))
        }
    )
