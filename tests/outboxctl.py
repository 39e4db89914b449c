"""Run the real ``outboxctl`` of this environment as a subprocess, with a clean environment.

The child sees this process's environment without any ``OUTBOX_*`` variable (a developer's
or CI's settings must not leak into a test), a free loopback port for every listener it may
open (never a default port another process on the machine may hold), then exactly the
variables a test gives.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner, Result

from outbox.entrypoints.cli.app import app
from tests.integration.providers.network import free_port
from tests.logging_state import logging_restored

OUTBOXCTL = str(Path(sys.executable).with_name("outboxctl"))
# Every listener ``outboxctl`` opens: the API, the admin listener, the webhooks and a worker's
# health and metrics listener.
LISTENER_PORTS = (
    "OUTBOX_HTTP_PORT",
    "OUTBOX_ADMIN_PORT",
    "OUTBOX_WEBHOOK_PORT",
    "OUTBOX_WORKER_METRICS_PORT",
)


def outboxctl_environment(variables: dict[str, str]) -> dict[str, str]:
    """This environment without ``OUTBOX_*`` variables, a free port per listener, then
    ``variables``."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("OUTBOX_")}
    ports = {name: str(free_port()) for name in LISTENER_PORTS}
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


def invoke_outboxctl(*command: str, variables: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``outboxctl COMMAND…`` in this process, as ``run_outboxctl`` runs it in a child.

    For tests where the process boundary proves nothing: the same environment (no outer
    ``OUTBOX_*`` variable, ``variables`` on top), the same exit code, stdout and stderr, a
    second or more sooner. It runs in a thread of its own, since the command starts its own
    event loop and the calling test may be running one (a command that sets signal
    handlers, such as ``consume``, needs a test with no loop of its own: it then runs in
    this thread). Logging is put back after each run. An exception the command lets
    escape is re-raised here: the installed command would have crashed.
    """
    environment: dict[str, str | None] = {
        name: None for name in os.environ if name.startswith("OUTBOX_")
    }
    environment |= outboxctl_environment(variables)

    def invoke() -> Result:
        with logging_restored():
            return CliRunner().invoke(app, list(command), env=environment, catch_exceptions=True)

    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop here: the main thread, where signal handlers can be set
        result = invoke()
    else:
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as thread:
            result = thread.submit(invoke).result()
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess(
        [OUTBOXCTL, *command], result.exit_code, result.stdout, result.stderr
    )
