"""``outboxctl worker --processes N``: the supervisor of N worker processes, composed."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry

from outbox.adapters.telemetry.reporter import StructlogPrometheusTelemetry
from outbox.entrypoints.settings.lanes import (
    LANES_VARIABLE,
    RESERVED_SLOT_VARIABLE,
    SECURITY,
    ReservedSlot,
)
from outbox.entrypoints.settings.reader import PREFIX
from outbox.entrypoints.settings.tree import Settings
from outbox.entrypoints.worker.supervisor import Supervisor, summed

LANES = f"{PREFIX}{LANES_VARIABLE}"
RESERVED = f"{PREFIX}{RESERVED_SLOT_VARIABLE}"


def supervise_workers(
    settings: Settings,
    *,
    processes: int,
    drain: bool,
    options: Sequence[str],
    lanes_apart: Sequence[str] | None = None,
) -> tuple[int, dict[str, Any] | None]:
    """Run ``processes`` ``outboxctl worker`` processes with ``options``; their exit code.

    With ``lanes_apart``, ``processes`` of each of those lanes, each process running its one
    lane (``OUTBOX_WORKER_LANES``); the security lane as two, its batches in one and its
    reserved slot in the other (``OUTBOX_WORKER_RESERVED_SLOT``), so that a code is claimed
    and sent on an event loop that nothing else uses. With ``drain``, also the totals: each
    lane summed over the processes, and each process's own under ``processes``. With a
    metrics port P configured, process i listens on P + i.
    """
    metrics_port = settings.worker.metrics_port
    apart = _apart(lanes_apart) if lanes_apart else [{}]

    def env_for(index: int) -> Mapping[str, str]:
        env = dict(os.environ)
        if metrics_port:
            env["OUTBOX_WORKER_METRICS_PORT"] = str(metrics_port + index)
        env.update(apart[index % len(apart)])
        return env

    supervisor = Supervisor(
        command=[sys.executable, "-m", "outbox.entrypoints.cli", "worker", *options],
        processes=processes * len(apart),
        drain=drain,
        env_for=env_for,
        telemetry=StructlogPrometheusTelemetry(CollectorRegistry()),
    )
    run = supervisor.run()
    totals = summed(run.children) if drain and run.returncode == 0 else None
    return run.returncode, totals


def _apart(lanes: Sequence[str]) -> list[dict[str, str]]:
    """Each child's variables: one lane each, the security lane's reserved slot apart."""
    children: list[dict[str, str]] = []
    for lane in lanes:
        if lane == SECURITY:
            children += [
                {LANES: lane, RESERVED: ReservedSlot.ELSEWHERE.value},
                {LANES: lane, RESERVED: ReservedSlot.ONLY.value},
            ]
        else:
            children.append({LANES: lane})
    return children
