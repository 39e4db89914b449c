"""One tenant-events scenario's world: the database, the recording target, producers, workers.

Workers are ``outboxctl worker --lanes events`` processes whose events lane publishes to the
recording target (tests/reliability/event_worker.py). ``finish`` ends every events scenario
the same way: stop the workers, classify every acknowledged event from the database, audit
order, fences and offers, check every log line, and record the counts.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import attrs
import psycopg

from tests.reliability.event_checker import EventSnapshot, EventVerdict, check_events
from tests.reliability.event_ledger import EventLedger
from tests.reliability.event_producer import EventProducer
from tests.reliability.leak_scan import Needles, scan_lines
from tests.reliability.profile import record_counts
from tests.reliability.workers import OUTBOXCTL, Workers

ROOT = Path(__file__).resolve().parents[2]
EVENT_WORKER = (sys.executable, "-m", "tests.reliability.event_worker")
PLAIN_WORKER = (OUTBOXCTL, "worker", "--lanes", "events")  # the product's, with no target
# Live records not held back by an unresolved dead letter of an earlier event of theirs.
UNSETTLED = """
SELECT count(*) FROM events.outbox_records AS r
WHERE r.state IN ('pending', 'leased') AND NOT EXISTS (
    SELECT 1 FROM events.dead_letters AS d
    WHERE d.resolution IS NULL AND d.organization_id = r.organization_id
      AND d.aggregate_type = r.aggregate_type AND d.aggregate_id = r.aggregate_id
      AND d.append_sequence < r.append_sequence
)
"""
LEASED_BY = "SELECT count(*) FROM events.outbox_records WHERE state = 'leased' AND lease_owner = %s"


def event_worker_env(ledger: EventLedger) -> Any:
    """Label -> the variables of one events worker: the ledger target, and this checkout."""

    def env(label: str) -> dict[str, str]:
        return {**ledger.worker_env(label), "PYTHONPATH": str(ROOT)}

    return env


@attrs.define
class EventScenario:
    """Everything an events scenario drives, and the common ending."""

    url: str  # superuser, direct: the checker's view
    ledger: EventLedger
    producer: EventProducer
    workers: Workers
    untargeted: set[str] = attrs.field(factory=set)  # labels of plain ``outboxctl`` workers

    def scalar(self, query: str, *params: object) -> int:
        """One number from the database (superuser, direct)."""
        with psycopg.connect(self.url, autocommit=True) as conn:
            row = conn.execute(query, params).fetchone()  # type: ignore[arg-type]
        assert row is not None
        return int(row[0])

    def rows(self, query: str, *params: object) -> list[tuple[Any, ...]]:
        """Rows from the database (superuser, direct)."""
        with psycopg.connect(self.url, autocommit=True) as conn:
            return conn.execute(query, params).fetchall()  # type: ignore[arg-type]

    def unsettled(self) -> int:
        """Records still to publish that no dead letter parks."""
        return self.scalar(UNSETTLED)

    def leased_by(self, owner: str) -> int:
        """Records under a lease of ``owner`` right now."""
        return self.scalar(LEASED_BY, owner)

    async def settle(self, within: float = 90) -> None:
        """Wait until every record that may be published is final."""
        deadline = time.monotonic() + within
        while (left := self.unsettled()) > 0:
            if time.monotonic() > deadline:
                tails = "\n".join(w.tail(5) for w in self.workers.alive())
                raise AssertionError(f"{left} records still live after {within}s\n{tails}")
            await asyncio.sleep(0.1)

    def start_plain(self, **overrides: str) -> None:
        """Start an ``outboxctl worker --lanes events`` (no target) and note it as such."""
        self.untargeted.add(self.workers.start(command=PLAIN_WORKER, **overrides).label)

    async def finish(self, name: str, *, parked: bool = False, **counts: Any) -> EventVerdict:
        """Stop workers, check everything, record the counts; return the verdict.

        ``parked``: whether events may wait behind an unresolved dead letter at the end.
        """
        await self.workers.stop_all()
        verdict = check_events(
            self.producer.acknowledged,
            EventSnapshot.read(self.url),
            self.ledger.offers(),
            self.workers.owners,
            untargeted={
                owner for label in self.untargeted if (owner := self.workers.owners.get(label))
            },
        )
        leaks = scan_lines(self.workers.log_lines(), Needles.of(secrets=[], destinations=[]))
        record_counts(
            name,
            {
                **verdict.counts(),
                "replays": self.producer.replays,
                "unacknowledged_appends": len(self.producer.unknown),
                "lease_lost_refusals": self.workers.count_events("event.lease_lost"),
                "worker_processes": len(self.workers.started),
                "log_problems": len(leaks),
                **counts,
            },
        )
        problems = verdict.problems[:20]
        assert [] == leaks
        assert 0 == verdict.lost, problems
        assert 0 == verdict.double_publications, problems
        assert 0 == verdict.order_violations, problems
        assert 0 == verdict.fence_violations, problems
        assert 0 == verdict.stale_token_attempts, problems
        assert 0 == verdict.unleased_offers, problems
        assert 0 == verdict.target_order_violations, problems
        assert 0 == verdict.published_unaccepted, problems
        if not parked:
            assert 0 == verdict.parked, problems
        return verdict
