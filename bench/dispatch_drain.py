"""Our dispatch drain: claim → open → render → no-op provider → record, through the real worker."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from bench import workload
from bench.databases import Database
from bench.harness import Drained, Setting, Stopwatch
from bench.worker import Worker, WorkerConfig
from outbox.adapters.crypto.envelope import EnvelopeSealer
from outbox.adapters.crypto.keyring import parse_keyring

Kind = str  # "notification" or "sealed_code"


@attrs.frozen(kw_only=True)
class DispatchDrain:
    """Loads ``messages`` of one kind, then times the real worker loop draining them."""

    database: Database
    keyring: str = attrs.field(repr=False)
    messages: int
    kind: Kind
    config: WorkerConfig

    def settings(self) -> dict[str, Setting]:
        """What this figure was measured with."""
        return {
            "messages": self.messages,
            "kind": self.kind,
            "loop": "WorkerLoop(drain=True)",
            **self.config.settings(),
        }

    async def once(self, worker: Worker) -> Drained:
        """Fill the queue, drain it, check every message was published; return the timing."""
        await self.fill(self.messages)
        with Stopwatch() as timing:
            totals = await worker.drain()
        if totals.published != self.messages:
            raise RuntimeError(f"published {totals.published} of {self.messages}: {totals}")
        return Drained(self.messages, timing)

    async def fill(self, count: int) -> None:
        """Empty the queue and enqueue ``count`` messages of this kind."""
        await workload.empty(self.database.conninfo)
        await workload.load(self.database.conninfo, [self.row_maker()(n) for n in range(count)])

    def row_maker(self) -> Callable[[int], dict[str, object]]:
        """The enqueue arguments of the n-th message of this kind."""
        if self.kind == "notification":
            return workload.notification
        sealer = EnvelopeSealer(parse_keyring(self.keyring))
        return lambda n: workload.sealed_code(n, sealer)
