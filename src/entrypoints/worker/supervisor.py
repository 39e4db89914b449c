"""``outboxctl worker --processes N``: N worker processes under one supervisor.

One worker process is one Python interpreter, so it uses at most one core for its own work
(docs/benchmarks.md). The supervisor starts N ordinary worker processes (each the
single-process ``outboxctl worker``, with its own pools, listener and lease owner name;
SKIP LOCKED keeps their claims disjoint), forwards SIGTERM and SIGINT to them so each stops
gracefully, and watches them: a child that dies while nothing asked it to stop is started
again, unless it died within ``restart_within`` seconds of its start (a configuration or
database error that a restart would only repeat), in which case the others are stopped and
the supervisor exits with the child's code. With ``--drain`` each child exits once nothing
is due, and the supervisor returns what each one did.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from types import FrameType
from typing import IO, Any

import attrs

from outbox.application.ports import Telemetry

FORWARDED = (signal.SIGTERM, signal.SIGINT)


@attrs.define(kw_only=True)
class _Child:
    index: int
    process: subprocess.Popen[bytes]
    started: float


@attrs.frozen(kw_only=True)
class ChildResult:
    """How one child ended: its pid, exit code and, in drain mode, its printed totals."""

    index: int
    pid: int
    returncode: int
    totals: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class SupervisedRun:
    """The supervisor's result: the exit code to leave with and each child's last run."""

    returncode: int
    children: Sequence[ChildResult]


@attrs.define(kw_only=True)
class Supervisor:
    """Runs ``processes`` copies of ``command`` until they drain or a signal stops them."""

    command: Sequence[str]
    processes: int = attrs.field(validator=attrs.validators.ge(1))
    drain: bool
    env_for: Callable[[int], Mapping[str, str]]  # child index → its environment
    telemetry: Telemetry
    restart_within: float = 10.0
    poll_seconds: float = 0.05
    _stopping: bool = attrs.field(default=False, alias="_stopping")
    _children: dict[int, _Child] = attrs.field(factory=dict, alias="_children")
    _forwarded: set[int] = attrs.field(factory=set, alias="_forwarded")

    def run(self) -> SupervisedRun:
        """Start the children and supervise them until all have exited."""
        previous = {signum: signal.getsignal(signum) for signum in FORWARDED}
        for signum in FORWARDED:
            signal.signal(signum, self._forward)
        results: dict[int, ChildResult] = {}
        returncode = 0
        try:
            for index in range(self.processes):
                self._start(index)
            self.telemetry.event(
                "worker.supervisor_started",
                processes=self.processes,
                pids=",".join(str(child.process.pid) for child in self._children.values()),
                drain=self.drain,
            )
            while self._children:
                for child in list(self._children.values()):
                    code = child.process.poll()
                    if code is None:
                        continue
                    if self._stopping and -code in self._forwarded:
                        # Stopped by the forwarded signal before it could install its own
                        # handler: it had claimed nothing yet, so this is a clean stop.
                        code = 0
                    elif code < 0:
                        code = 128 - code  # killed by a signal: the shell's convention
                    del self._children[child.index]
                    result = self._ended(child, code)
                    results[child.index] = result
                    if code == 0 or self._stopping:
                        returncode = returncode or code
                        continue
                    if self.drain or time.monotonic() - child.started < self.restart_within:
                        self.telemetry.event(
                            "worker.child_failed",
                            level="error",
                            index=child.index,
                            pid=result.pid,
                            exit_status=code,
                        )
                        returncode = returncode or code
                        self._stop_all(signal.SIGTERM)
                        continue
                    self.telemetry.event(
                        "worker.child_restarted",
                        level="warning",
                        index=child.index,
                        pid=result.pid,
                        exit_status=code,
                    )
                    self._start(child.index)
                time.sleep(self.poll_seconds)
        finally:
            for child in self._children.values():  # only on an error of the supervisor itself
                child.process.kill()
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        self.telemetry.event("worker.supervisor_stopped", exit_status=returncode)
        return SupervisedRun(
            returncode=returncode, children=[results[index] for index in sorted(results)]
        )

    def _start(self, index: int) -> None:
        process = subprocess.Popen(  # noqa: S603 - our own CLI, argv built by us
            list(self.command),
            env=dict(self.env_for(index)),
            stdout=subprocess.PIPE if self.drain else subprocess.DEVNULL,
        )
        self._children[index] = _Child(index=index, process=process, started=time.monotonic())

    def _ended(self, child: _Child, code: int) -> ChildResult:
        totals = _read_totals(child.process.stdout) if self.drain and code == 0 else None
        if child.process.stdout is not None:
            child.process.stdout.close()
        return ChildResult(index=child.index, pid=child.process.pid, returncode=code, totals=totals)

    def _forward(self, signum: int, _frame: FrameType | None) -> None:
        if not self._stopping:
            self.telemetry.event("worker.supervisor_stopping", signal=signal.Signals(signum).name)
        self._stopping = True
        self._stop_all(signal.Signals(signum))

    def _stop_all(self, signum: signal.Signals) -> None:
        self._stopping = True
        self._forwarded.add(int(signum))
        for child in self._children.values():
            if child.process.poll() is None:
                child.process.send_signal(signum)


def _read_totals(stream: IO[bytes] | None) -> Mapping[str, Any] | None:
    if stream is None:
        return None
    text = stream.read().decode("utf-8", "replace").strip()
    try:
        totals = json.loads(text)
    except ValueError:
        return None
    return totals if isinstance(totals, dict) else None


def summed(children: Sequence[ChildResult]) -> dict[str, Any]:
    """Each lane's totals summed over the children, and every child's own under ``processes``."""
    lanes: dict[str, dict[str, int]] = {}
    for child in children:
        for lane, counts in (child.totals or {}).items():
            into = lanes.setdefault(lane, {})
            for name, value in counts.items():
                into[name] = into.get(name, 0) + int(value)
    return {
        **lanes,
        "processes": [{"pid": child.pid, **(child.totals or {})} for child in children],
    }
