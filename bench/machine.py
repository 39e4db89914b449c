"""What the run ran on: cores, CPU model, memory, Python and PostgreSQL versions."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path


def describe(server_version: str, server_kind: str) -> dict[str, str | int]:
    """The machine and software facts printed above the table and stored in the JSON."""
    return {
        "cores": os.cpu_count() or 0,
        "cpu": _cpu_model(),
        "memory_gib": _memory_gib(),
        "kernel": platform.release(),
        "python": sys.version.split()[0],
        "postgresql": server_version,
        "postgresql_server": server_kind,
    }


def _cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    return platform.processor() or "unknown"


def _memory_gib() -> int:
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024)
    return 0
