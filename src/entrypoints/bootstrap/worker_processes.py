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
    settings: Settings, *, processes: int, drain: bool, options: Sequence[str]
) -> tuple[int, dict[str, Any] | None]:
    """Run ``processes`` ``outboxctl worker`` processes with ``options``; their exit code.

    With ``drain``, also the totals: each lane summed over the processes, and each process's
    own under ``processes``. With a metrics port P configured, process i listens on P + i.
    """
    metrics_port = settings.worker.metrics_port

    def env_for(index: int) -> Mapping[str, str]:
        env = dict(os.environ)
        if metrics_port:
            env["OUTBOX_WORKER_METRICS_PORT"] = str(metrics_port + index)
        return env

    supervisor = Supervisor(
        command=[sys.executable, "-m", "outbox.entrypoints.cli", "worker", *options],
        processes=processes,
        drain=drain,
        env_for=env_for,
        telemetry=StructlogPrometheusTelemetry(CollectorRegistry()),
    )
    run = supervisor.run()
    totals = summed(run.children) if drain and run.returncode == 0 else None
    return run.returncode, totals
