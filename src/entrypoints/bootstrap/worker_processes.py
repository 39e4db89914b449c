"""``outboxctl worker --processes N``: the supervisor of N worker processes, composed."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry

from outbox.adapters.telemetry.reporter import StructlogPrometheusTelemetry
from outbox.entrypoints.settings.tree import Settings
from outbox.entrypoints.worker.supervisor import Supervisor, summed


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
    lane (``OUTBOX_WORKER_LANES``). With ``drain``, also the totals: each lane summed over the
    processes, and each process's own under ``processes``. With a metrics port P configured,
    process i listens on P + i.
    """
    metrics_port = settings.worker.metrics_port
    children = processes * len(lanes_apart) if lanes_apart else processes

    def env_for(index: int) -> Mapping[str, str]:
        env = dict(os.environ)
        if metrics_port:
            env["OUTBOX_WORKER_METRICS_PORT"] = str(metrics_port + index)
        if lanes_apart:
            env["OUTBOX_WORKER_LANES"] = lanes_apart[index % len(lanes_apart)]
        return env

    supervisor = Supervisor(
        command=[sys.executable, "-m", "outbox.entrypoints.cli", "worker", *options],
        processes=children,
        drain=drain,
        env_for=env_for,
        telemetry=StructlogPrometheusTelemetry(CollectorRegistry()),
    )
    run = supervisor.run()
    totals = summed(run.children) if drain and run.returncode == 0 else None
    return run.returncode, totals
