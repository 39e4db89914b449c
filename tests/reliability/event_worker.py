"""``python -m tests.reliability.event_worker [--drain]``: ``outboxctl worker --lanes events``
whose events lane also publishes to the ledger target (tests/reliability/event_ledger.py).

The product configures no publication target yet (the broker relay comes later), so a
worker publishes an event the moment it claims it and a kill rarely finds one in flight.
This process is the same worker — the same settings, lanes, loop, signals and logs as
``outboxctl worker`` — given one target over loopback HTTP, which records every offer.
"""

from __future__ import annotations

import asyncio
import os
import sys

import attrs

from outbox.entrypoints.bootstrap.worker_process import run_worker
from outbox.entrypoints.cli.guard import run_guarded
from outbox.entrypoints.cli.startup import start
from outbox.entrypoints.settings.lanes import EVENTS
from tests.reliability.event_ledger import TARGET_URL_VARIABLE, WORKER_LABEL_VARIABLE, LedgerTarget


def main(argv: list[str]) -> int:
    """Run the events lane with the ledger target until stopped (or, with --drain, drained)."""
    drain = "--drain" in argv
    target = LedgerTarget(
        url=os.environ[TARGET_URL_VARIABLE], worker=os.environ[WORKER_LABEL_VARIABLE]
    )
    settings = start()
    settings = attrs.evolve(settings, worker=attrs.evolve(settings.worker, lanes=(EVENTS,)))
    run_guarded(lambda: asyncio.run(run_worker(settings, drain=drain, targets=[target])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
