"""The worker's /healthz and /readyz, served beside its /metrics.

Ready means: the database answers as the worker's role with every migration applied, every
lane's LISTEN connection is up, and not every provider in use is suspended. The listener's
thread asks the worker's event loop for the database check, so the check uses the worker's
pool. Both answers name the lanes the worker runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import attrs

from outbox.application.ports import ReadinessProbe, ReadinessReport

CHECK_TIMEOUT = 5.0


@attrs.frozen(kw_only=True)
class WorkerReadiness:
    """Answers the worker's probes from its pool, its listener and its provider breaker."""

    probe: ReadinessProbe
    listening: Mapping[str, Callable[[], bool]]  # lane → whether its LISTEN connection is up
    providers: Callable[[], frozenset[str]]  # the providers in use
    suspended: Callable[[], frozenset[str]]  # the providers suspended now
    loop: asyncio.AbstractEventLoop

    def healthz(self) -> tuple[int, Mapping[str, object]]:
        """Always ok while the listener answers."""
        return 200, {"status": "ok", "lanes": list(self.listening)}

    def readyz(self) -> tuple[int, Mapping[str, object]]:
        """200 when ready; else 503 naming the first failing check and what to do."""
        try:
            report = asyncio.run_coroutine_threadsafe(self.probe.check(), self.loop).result(
                timeout=CHECK_TIMEOUT
            )
        except (TimeoutError, RuntimeError):  # the loop is busy past the timeout, or closing
            report = ReadinessReport(database_reachable=False, error_code="timeout")
        status, hint = report.failed, report.hint
        used = self.providers()
        down = [lane for lane, listening in self.listening.items() if not listening()]
        if not status and down:
            status = "listener_down"
            hint = f"the LISTEN connection of the {', '.join(down)} lane is reconnecting"
        if not status and used and used <= self.suspended():
            status, hint = "providers_suspended", "every provider in use is suspended"
        lanes = list(self.listening)
        if not status:
            return 200, {"status": "ready", "lanes": lanes}
        body: dict[str, object] = {"status": status, "hint": hint, "lanes": lanes}
        if report.pending_migrations:
            body["pendingMigrations"] = list(report.pending_migrations)
        if report.missing_role:
            body["missingRole"] = report.missing_role
        return 503, body
