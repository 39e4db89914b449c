"""Run the real ``outboxctl`` of this environment as a subprocess, with a clean environment.

The child sees this process's environment without any ``OUTBOX_*`` variable (a developer's
or CI's settings must not leak into a test), plus exactly the variables a test gives.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

OUTBOXCTL = str(Path(sys.executable).with_name("outboxctl"))


def outboxctl_environment(variables: dict[str, str]) -> dict[str, str]:
    """This environment without ``OUTBOX_*`` variables, then ``variables``."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("OUTBOX_")}
    return {**inherited, **variables}


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
