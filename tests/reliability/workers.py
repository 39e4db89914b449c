"""``outboxctl worker`` processes: started, signalled and killed the way an operator (or the OOM
killer) would, with their JSON logs kept per process for the audit and the leak scan."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from tests.outboxctl import outboxctl_environment

OUTBOXCTL = str(Path(sys.executable).with_name("outboxctl"))


@attrs.define
class Worker:
    """One worker process and where its output goes."""

    label: str
    process: subprocess.Popen[bytes]
    log: Path  # standard error: one JSON event per line
    out: Path  # standard output: the drain totals
    signals: list[tuple[float, str]] = attrs.field(factory=list)

    @property
    def pid(self) -> int:
        """The process id."""
        return self.process.pid

    @property
    def alive(self) -> bool:
        """Whether the process has not exited yet."""
        return self.process.poll() is None

    def events(self, name: str | None = None) -> list[dict[str, Any]]:
        """The log's JSON events (named ``name`` if given), in order."""
        found = []
        for line in self.lines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if name is None or event.get("event") == name:
                found.append(event)
        return found

    def lines(self) -> list[str]:
        """Every line the process wrote to standard error."""
        if not self.log.exists():
            return []
        return self.log.read_text(encoding="utf-8", errors="replace").splitlines()

    def owner(self) -> str | None:
        """The lease owner name the worker announced in ``worker.started``."""
        started = self.events("worker.started")
        return str(started[0]["owner"]) if started else None

    def signal(self, signum: signal.Signals) -> None:
        """Send ``signum`` and note when."""
        self.signals.append((time.time(), signum.name))
        self.process.send_signal(signum)

    async def started(self, within: float = 30) -> str:
        """Wait until the worker has announced its owner name; return it."""
        deadline = time.monotonic() + within
        while (owner := self.owner()) is None:
            if not self.alive:
                raise AssertionError(f"{self.label} exited early: {self.tail()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.label} never started: {self.tail()}")
            await asyncio.sleep(0.05)
        return owner

    async def exited(self, within: float = 60) -> int:
        """Wait for the process to exit; return its exit code."""
        deadline = time.monotonic() + within
        while (code := self.process.poll()) is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.label} did not exit: {self.tail()}")
            await asyncio.sleep(0.05)
        return code

    def tail(self, lines: int = 15) -> str:
        """The end of the log, for failure messages."""
        return "\n".join(self.lines()[-lines:])


@attrs.define
class Workers:
    """Starts workers with one environment and keeps every process ever started."""

    directory: Path
    env: Mapping[str, str]
    provider_env: Any  # callable label -> OUTBOX_* provider variables
    command: tuple[str, ...] = (OUTBOXCTL, "worker")  # what a worker process runs
    started: list[Worker] = attrs.field(factory=list)
    owners: dict[str, str] = attrs.field(factory=dict)  # label -> lease owner

    def start(self, *args: str, command: tuple[str, ...] | None = None, **overrides: str) -> Worker:
        """Start ``command *args`` (by default the workers', ``outboxctl worker``);
        ``overrides`` are extra variables."""
        label = f"w{len(self.started) + 1}"
        env = {
            **outboxctl_environment({}),
            **self.env,
            **self.provider_env(label),
            **overrides,
        }
        log = self.directory / f"{label}.log"
        out = self.directory / f"{label}.out"
        with log.open("wb") as err_file, out.open("wb") as out_file:
            process = subprocess.Popen(
                [*(command or self.command), *args], env=env, stdout=out_file, stderr=err_file
            )
        worker = Worker(label=label, process=process, log=log, out=out)
        self.started.append(worker)
        return worker

    async def start_ready(
        self, *args: str, command: tuple[str, ...] | None = None, **overrides: str
    ) -> Worker:
        """Start a worker and wait until it has announced its owner name."""
        worker = self.start(*args, command=command, **overrides)
        self.owners[worker.label] = await worker.started()
        return worker

    async def start_many(self, count: int, *args: str, **overrides: str) -> list[Worker]:
        """Start ``count`` workers at once and wait until each has announced itself."""
        workers = [self.start(*args, **overrides) for _ in range(count)]
        for worker in workers:
            self.owners[worker.label] = await worker.started()
        return workers

    def alive(self) -> list[Worker]:
        """The workers still running."""
        return [worker for worker in self.started if worker.alive]

    async def stop_all(self, within: float = 30) -> None:
        """SIGTERM every live worker and wait for each; SIGKILL what does not stop."""
        for worker in self.alive():
            worker.signal(signal.SIGCONT)
            worker.signal(signal.SIGTERM)
        for worker in self.started:
            try:
                await worker.exited(within)
            except AssertionError:
                worker.process.kill()
                worker.process.wait()
        for worker in self.started:
            if worker.label not in self.owners and (owner := worker.owner()) is not None:
                self.owners[worker.label] = owner

    def log_lines(self) -> list[str]:
        """Every log line of every worker, for the leak scan."""
        return [line for worker in self.started for line in worker.lines()]

    def count_events(self, name: str) -> int:
        """How many ``name`` events all workers logged."""
        return sum(len(worker.events(name)) for worker in self.started)
