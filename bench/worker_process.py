"""The worker in its own process, for latency (serve) and peak memory (drain) measurements.

Run as ``python -m bench.worker_process serve|drain CONNINFO OUT BATCH CONCURRENCY LANES
[events] [consumers] [no-reserved-slot]``; the keyring comes in the ``BENCH_KEYRING``
environment variable. ``serve`` prints ``ready`` once it listens, runs until SIGTERM, then
writes when each message reached the provider; with ``events`` it runs the worker's events
lane beside the security lane, in the same process and event loop, as ``outboxctl worker``
does by default; with ``consumers`` its consumers lane too, running the bench consumer
(``bench.effects``) with a no-op handler as the bench module's role; with
``no-reserved-slot`` the security lane runs without its reserved slot; with ``urgent-only``
the reserved slot runs alone (as ``OUTBOX_WORKER_RESERVED_SLOT=only`` does); with
``slot-elsewhere`` the batches run alone and leave a fresh code to the slot in another
process (as ``OUTBOX_WORKER_RESERVED_SLOT=elsewhere`` does).
``drain`` runs until nothing is due and writes its count, duration and peak resident memory.
``events`` (as the mode: ``python -m bench.worker_process events CONNINFO``) runs the events
lane alone, as a worker process of its own, until SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import signal
import sys
import time
from pathlib import Path
from typing import Any
from uuid import UUID

import attrs

from bench.consumers import running_consumers_lane
from bench.events_drain import running_events_lane
from bench.worker import NO_RESERVED_SLOT, WorkerConfig, running_worker
from outbox.application.delivery.batch import BatchTally
from outbox.application.events.publish_due_events import PublishDueEvents
from outbox.entrypoints.bootstrap.worker import (
    CLAIM_FLOOR_EVERY,
    listen_before_claiming,
    security_loop,
)
from outbox.entrypoints.settings.lanes import ReservedSlot
from outbox.entrypoints.worker.loop import WorkerLoop
from outbox.entrypoints.worker.schedule import Every

KEYRING_VARIABLE = "BENCH_KEYRING"
READY = "ready"
CLAIMS_SUFFIX = ".claims.json"  # serve also writes every claim's duration (s), by lane
EVENTS = "events"  # serve: the events lane too
CONSUMERS = "consumers"  # serve: the consumers lane too, with the bench consumer
URGENT_ONLY = "urgent-only"  # serve: the reserved slot alone, no batches of all priorities
# serve: the batches alone, leaving a fresh code to the slot in another process
SLOT_ELSEWHERE = "slot-elsewhere"


# The claim timings the worker observes, by the lane they are kept under.
CLAIM_TIMINGS = {"outbox_claim_seconds": "codes", "outbox_event_claim_seconds": "events"}


@attrs.define
class ClaimTimes:
    """A lane's telemetry, also keeping every claim's duration it observes, by lane."""

    inner: Any
    seconds: dict[str, list[float]] = attrs.field(factory=dict)

    def observe(self, name: str, /, value: float, **labels: str) -> None:
        """Keep a claim's duration; pass everything on."""
        if name in CLAIM_TIMINGS:
            self.seconds.setdefault(CLAIM_TIMINGS[name], []).append(value)
        self.inner.observe(name, value, **labels)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def peak_rss_kib() -> int:
    """This process's peak resident set size (VmHWM), in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


async def serve(
    conninfo: str,
    config: WorkerConfig,
    *,
    events: bool,
    consumers: bool = False,
    claims: dict[str, list[float]] | None = None,
    slot: ReservedSlot = ReservedSlot.BESIDE,
) -> dict[str, float]:
    """Run the worker loop until SIGTERM; return when each message reached the provider
    (and, into ``claims``, how long each claim of the security lane, "codes", and of the
    events lane, "events", took)."""
    received: dict[UUID, float] = {}
    async with contextlib.AsyncExitStack() as stack:
        worker = await stack.enter_async_context(
            running_worker(conninfo, os.environ[KEYRING_VARIABLE], config, received=received)
        )
        # With no slot anywhere (the comparison without it), the codes' own channel wakes
        # the batches, as the lane's did for every message before 0065; the flood is queued
        # before the worker starts and needs no wake-up. Otherwise ``outboxctl worker``'s
        # own loop, with the slot where ``slot`` puts it.
        unslotted = slot is ReservedSlot.BESIDE and not config.reserved_slot
        urgent = worker.services.wait_for_urgent_work
        assert urgent is not None
        settings = attrs.evolve(
            worker.settings,
            worker=attrs.evolve(
                worker.settings.worker, reserved_slot=slot, poll_interval=config.poll_interval
            ),
        )
        # LISTEN before "ready", on the channels this process's loops read only.
        if unslotted:
            await urgent(0)
        else:
            await listen_before_claiming(worker.services, slot)
        loops: list[WorkerLoop[Any]] = []
        timed = ClaimTimes(worker.dispatch.telemetry)
        if events:
            lane = await stack.enter_async_context(running_events_lane(conninfo))
            assert isinstance(lane.loop.dispatch, PublishDueEvents)
            publish = attrs.evolve(
                lane.loop.dispatch,
                telemetry=ClaimTimes(lane.loop.dispatch.telemetry, timed.seconds),
            )
            loops.append(
                attrs.evolve(lane.loop, dispatch=publish, drain=False, totals=BatchTally())
            )
        if consumers:
            consuming = await stack.enter_async_context(running_consumers_lane(conninfo))
            loops.append(consuming.loop)
        dispatch = attrs.evolve(worker.dispatch, telemetry=timed)
        if unslotted:
            loops.append(
                WorkerLoop(
                    totals=BatchTally(),
                    dispatch=dispatch,
                    wait_for_work=urgent,
                    telemetry=worker.dispatch.telemetry,
                    poll_interval=config.poll_interval,
                    parallel_batches=config.lanes,
                )
            )
        else:
            loops.append(security_loop(settings, worker.services, drain=False, dispatch=dispatch))

        def stop() -> None:
            for each in loops:
                each.stop()

        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop)
        # As ``outboxctl worker`` schedules it: where claims start, recomputed every second.
        floor = Every(
            name="claim_floor",
            interval=CLAIM_FLOOR_EVERY,
            job=worker.store.refresh_claim_floor,
            telemetry=worker.dispatch.telemetry,
        )
        refreshing = asyncio.create_task(floor.run())
        print(READY, flush=True)
        try:
            await asyncio.gather(*(each.run() for each in loops))
        finally:
            refreshing.cancel()
            await asyncio.gather(refreshing, return_exceptions=True)
    if claims is not None:
        claims.update(timed.seconds)
    return {str(key): value for key, value in received.items()}


async def drain(conninfo: str, config: WorkerConfig) -> dict[str, float]:
    """Drain every due message; return how many, how long, and the peak RSS."""
    async with running_worker(conninfo, os.environ[KEYRING_VARIABLE], config) as worker:
        started = time.perf_counter()
        totals = await worker.drain()
        elapsed = time.perf_counter() - started
    return {
        "published": totals.published,
        "claimed": totals.claimed,
        "seconds": elapsed,
        "peak_rss_kib": peak_rss_kib(),
    }


async def start_serving(
    conninfo: str,
    out: Path,
    config: WorkerConfig,
    keyring: str,
    *flags: str,
    within: float = 60,
) -> asyncio.subprocess.Process:
    """``python -m bench.worker_process serve`` with ``flags`` in a process of its own, once
    it printed that it is ready; it writes ``out`` when it stops."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.worker_process",
        "serve",
        conninfo,
        str(out),
        str(config.batch_size),
        str(config.concurrency),
        str(config.lanes),
        *flags,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, KEYRING_VARIABLE: keyring},
    )
    await until_ready(process, "the worker process", within)
    return process


async def until_ready(process: asyncio.subprocess.Process, what: str, within: float = 60) -> None:
    """Wait for ``process`` to print that it is ready."""
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), within)
    if line.decode().strip() != READY:
        raise RuntimeError(f"{what} did not start")


async def serve_events(conninfo: str) -> None:
    """The events lane alone, listening, until SIGTERM."""
    async with running_events_lane(conninfo) as lane:
        loop = attrs.evolve(lane.loop, drain=False, totals=BatchTally())
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, loop.stop)
        print(READY, flush=True)
        await loop.run()


def main(argv: list[str]) -> None:
    """Entry point: ``serve|drain CONNINFO OUT_JSON BATCH_SIZE CONCURRENCY LANES [flags]``,
    or ``events CONNINFO``."""
    if argv[0] == EVENTS:
        asyncio.run(serve_events(argv[1]))
        return
    mode, conninfo, out = argv[0], argv[1], Path(argv[2])
    flags = argv[6:]
    config = WorkerConfig(
        batch_size=int(argv[3]),
        concurrency=int(argv[4]),
        lanes=int(argv[5]),
        reserved_slot=NO_RESERVED_SLOT not in flags,
    )
    if mode == "serve":
        claims: dict[str, list[float]] = {}
        done = asyncio.run(
            serve(
                conninfo,
                config,
                events=EVENTS in flags,
                consumers=CONSUMERS in flags,
                claims=claims,
                slot=(
                    ReservedSlot.ONLY
                    if URGENT_ONLY in flags
                    else ReservedSlot.ELSEWHERE
                    if SLOT_ELSEWHERE in flags
                    else ReservedSlot.BESIDE
                ),
            )
        )
        out.with_suffix(CLAIMS_SUFFIX).write_text(json.dumps(claims))
    else:
        done = asyncio.run(drain(conninfo, config))
    out.write_text(json.dumps(done))


if __name__ == "__main__":
    main(sys.argv[1:])
