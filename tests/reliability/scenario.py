"""One fault scenario's world: the database, the proxy, the provider, producers and workers.

``finish`` ends every scenario the same way: stop the workers, classify every message,
audit fences and sends, scan every table and log line for secrets, and record the counts.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import psycopg

from tests.reliability.checker import Snapshot, Verdict, check
from tests.reliability.fault_proxy import FaultProxy
from tests.reliability.leak_scan import Needles, scan_database, scan_lines
from tests.reliability.ledger_provider import KEY_PREFIX, LedgerProvider
from tests.reliability.producer import MAGIC_LINK_BASE, SEAL_KEY, SEAL_KEY_LINE, Producer
from tests.reliability.profile import record_counts
from tests.reliability.workers import Workers

LIVE = "SELECT count(*) FROM outbox.messages WHERE state IN ('pending', 'leased')"
LEASED_BY = "SELECT count(*) FROM outbox.messages WHERE state = 'leased' AND lease_owner = %s"


def worker_env(database_url: str, data_dir: Path, **overrides: str) -> dict[str, str]:
    """OUTBOX_* variables for a fast-cycling worker on ``database_url`` as outbox_worker."""
    return {
        "OUTBOX_ENV": "development",
        "OUTBOX_DATABASE_URL": database_url,
        "OUTBOX_WORKER_DB_ROLE": "outbox_worker",
        "OUTBOX_SEAL_KEYS": SEAL_KEY_LINE,
        "OUTBOX_DATA_DIR": str(data_dir),
        "OUTBOX_LOG_FORMAT": "json",
        "OUTBOX_WORKER_POLL_SECONDS": "0.2",
        "OUTBOX_WORKER_LEASE_SECONDS": "2",
        "OUTBOX_PROVIDER_TIMEOUT_SECONDS": "1",
        "OUTBOX_RETRY_SCHEDULE_SECONDS": "0.2,0.4,0.8,1.6,3.2",
        "OUTBOX_WORKER_SHUTDOWN_GRACE_SECONDS": "10",
        "OUTBOX_MAGIC_LINK_BASE_URL": MAGIC_LINK_BASE,
        "OUTBOX_SWEEP_EXPIRY_SECONDS": "0.5",
        "OUTBOX_DB_POOL_MAX": "4",
        **overrides,
    }


@attrs.define
class Scenario:
    """Everything a scenario drives, and the common ending."""

    url: str  # superuser, direct: the checker's view
    proxy: FaultProxy
    ledger: LedgerProvider
    producer: Producer
    workers: Workers
    extra: dict[str, Any] = attrs.field(factory=dict)

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

    def live(self) -> int:
        """Messages not yet final."""
        return self.scalar(LIVE)

    def leased_by(self, owner: str) -> int:
        """Messages under a lease of ``owner`` right now."""
        return self.scalar(LEASED_BY, owner)

    async def settle(self, within: float = 90) -> None:
        """Wait until every message is final."""
        deadline = time.monotonic() + within
        while (live := self.live()) > 0:
            if time.monotonic() > deadline:
                tails = "\n".join(w.tail(5) for w in self.workers.alive())
                raise AssertionError(f"{live} messages still live after {within}s\n{tails}")
            await asyncio.sleep(0.1)

    async def until(self, predicate: Any, within: float = 30, what: str = "") -> None:
        """Poll ``predicate`` (a callable returning bool) until it holds."""
        deadline = time.monotonic() + within
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what or predicate}")
            await asyncio.sleep(0.05)

    def needles(self) -> Needles:
        """Every secret, destination and key of this scenario."""
        everything = [*self.producer.acknowledged, *self.producer.unknown]
        return Needles.of(
            secrets=[e.secret for e in everything if e.secret],
            destinations=[e.destination for e in everything],
            keys=[
                SEAL_KEY_LINE.split(":", 1)[1],
                SEAL_KEY.material.hex(),
                *(KEY_PREFIX + w.label for w in self.workers.started),
            ],
        )

    async def finish(self, name: str, **counts: Any) -> Verdict:
        """Stop workers, check everything, record the counts; return the verdict."""
        await self.workers.stop_all()
        verdict = check(
            self.producer.acknowledged,
            self.ledger.ledger(),
            Snapshot.read(self.url),
            self.workers.owners,
        )
        needles = self.needles()
        leaks = scan_database(self.url, needles) + scan_lines(self.workers.log_lines(), needles)
        refused = self.workers.count_events("outcome.lease_lost")
        answers = Counter(str(send.answer) for send in self.ledger.ledger())
        record_counts(
            name,
            {
                **verdict.counts(),
                "lease_lost_refusals": refused,
                "worker_processes": len(self.workers.started),
                "leaks": len(leaks),
                "provider_answers": dict(sorted(answers.items())),
                **counts,
            },
        )
        assert [] == leaks
        assert 0 == verdict.fence_violations, verdict.problems[:20]
        assert 0 == verdict.unleased_sends, verdict.problems[:20]
        assert 0 == verdict.lost, verdict.problems[:20]
        return verdict


def owners_of(workers: Workers) -> Mapping[str, str]:
    """Label -> lease owner of every worker that announced itself."""
    return dict(workers.owners)
