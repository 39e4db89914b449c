"""Run the real ``outboxctl`` of this environment as a subprocess, with a clean environment.

The child sees this process's environment without any ``OUTBOX_*`` variable (a developer's
or CI's settings must not leak into a test), a free loopback port for every listener it may
open (never a default port another process on the machine may hold), then exactly the
variables a test gives.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

OUTBOXCTL = str(Path(sys.executable).with_name("outboxctl"))
# Every listener ``outboxctl`` opens: the API, the admin listener, the webhooks and a worker's
# health and metrics listener.
LISTENER_PORTS = (
    "OUTBOX_HTTP_PORT",
    "OUTBOX_ADMIN_PORT",
    "OUTBOX_WEBHOOK_PORT",
    "OUTBOX_WORKER_METRICS_PORT",
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def outboxctl_environment(variables: dict[str, str]) -> dict[str, str]:
    """This environment without ``OUTBOX_*`` variables, a free port per listener, then
    ``variables``."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("OUTBOX_")}
    ports = {name: str(_free_port()) for name in LISTENER_PORTS}
    return {**inherited, **ports, **variables}


def run_outboxctl(
    *command: str, variables: dict[str, str], timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run ``outboxctl COMMAND…`` to its end; its exit code, stdout and stderr as text."""
    return subprocess.run(
        [OUTBOXCTL, *command],
        env=outboxctl_environment(variables),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
