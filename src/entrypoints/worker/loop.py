"""The worker loop: claim and dispatch until stopped; wake on NOTIFY, poll as a fallback."""

from __future__ import annotations

import asyncio
import collections
import random
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Generic, Protocol, TypeVar

import attrs

from outbox.application.errors import StoreUnavailable
from outbox.application.ports import Telemetry

MAX_BACKOFF = 10.0
# How long a wake-up waits for a running batch's next claim before it wakes an idle one: so
# that work is not left behind a batch whose sending takes long.
HINT_GRACE = 0.1


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
    and sending. Idle batches share one wait for work, and each wake-up (a notification or
    the poll) starts one claim, not one per idle batch: an idle batch is woken only when no
    batch is running, or when the running ones make no claim within ``HINT_GRACE``, or when
    a batch comes back full (``batch_size``; without one, any batch that claimed something),
    which says there is more. A running batch's next claim sees what the wake-up announced.
    With every idle batch claiming on every notification, the events lane made 3.4 claims
    per event at 100 events/s, each one a walk of the heads; now 1.6 (docs/benchmarks.md).

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
    batch_size: int | None = None  # the most one claim takes; None: any batch may be full
    _stopping: asyncio.Event = attrs.field(factory=asyncio.Event, alias="_stopping")
    _idling: asyncio.Future[None] | None = attrs.field(default=None, alias="_idling")
    _sleepers: collections.deque[asyncio.Future[None]] = attrs.field(
        factory=collections.deque, alias="_sleepers"
    )
    _hinted: bool = attrs.field(default=False, alias="_hinted")  # a claim is owed to a wake-up
    _hint_taken: asyncio.Event = attrs.field(factory=asyncio.Event, alias="_hint_taken")

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
            await self._batches(self.dispatch, self._idle, shared=False)
            return self.totals
        shared = self.parallel_batches > 1
        idle = self._shared_idle if shared else self._idle
        runs = [
            asyncio.ensure_future(self._batches(self.dispatch, idle, shared=shared))
            for _ in range(self.parallel_batches)
        ]
        if self.reserved is not None:
            wait = self.wait_for_reserved or self.wait_for_work
            runs.append(
                asyncio.ensure_future(
                    self._batches(self.reserved, lambda: self._idle(wait), shared=False)
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
        *,
        shared: bool,
    ) -> None:
        """Claim and dispatch batches while there is work; ``shared``: one of the lane's
        batches that share one wait for work (not the reserved slot)."""
        failures = 0
        while not self.stopping:
            if shared:
                self._take_hint()
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
            if result.claimed:
                if shared and result.claimed >= (self.batch_size or 1):
                    self._wake_one()  # a full batch: there may be more for an idle one
                continue
            if self.drain:
                break
            if shared and self._hinted:
                continue  # a wake-up came while this claim ran: it may have missed its work
            await idle()

    def _take_hint(self) -> None:
        """A claim starts: it sees whatever a wake-up before it announced."""
        if self._hinted:
            self._hinted = False
            self._hint_taken.set()

    def _wake_one(self) -> None:
        while self._sleepers:
            sleeper = self._sleepers.popleft()
            if not sleeper.done():
                sleeper.set_result(None)
                return

    async def _shared_idle(self) -> None:
        """Sleep until a wake-up (one listener for every idle batch) chooses this batch."""
        sleeper = asyncio.get_running_loop().create_future()
        self._sleepers.append(sleeper)
        if self._idling is None or self._idling.done():
            self._idling = asyncio.ensure_future(self._watch())
        try:
            await sleeper
        finally:
            if sleeper in self._sleepers:
                self._sleepers.remove(sleeper)

    async def _watch(self) -> None:
        """The idle batches' one wait for work, while any sleeps; each wake-up is one claim:
        a running batch's next one if it starts within ``HINT_GRACE``, else an idle batch's."""
        try:
            while self._sleepers:
                await self._idle()
                if self.stopping:
                    break
                if len(self._sleepers) < self.parallel_batches and await self._hint_is_taken():
                    continue
                self._wake_one()
        finally:
            for sleeper in self._sleepers:  # stopping (or cancelled): each sees it
                if not sleeper.done():
                    sleeper.set_result(None)
            self._sleepers.clear()

    async def _hint_is_taken(self) -> bool:
        """Whether a running batch starts a claim within ``HINT_GRACE`` of the wake-up."""
        self._hint_taken.clear()
        self._hinted = True
        try:
            async with asyncio.timeout(HINT_GRACE):
                await self._hint_taken.wait()
        except TimeoutError:
            self._hinted = False
            return False
        return True

    async def _idle(self, wait: Callable[[float], Awaitable[None]] | None = None) -> None:
        """Wait for a NOTIFY (on ``wait``, the lane's own by default), the poll interval, or
        stop, whichever comes first."""
        seconds = self.poll_interval.total_seconds()
        waiter = asyncio.ensure_future((wait or self.wait_for_work)(seconds))
        stopper = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (waiter, stopper):
                task.cancel()
            # A failed wait (the listening connection dropped) is not fatal: we poll anyway.
            await asyncio.gather(waiter, stopper, return_exceptions=True)

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
