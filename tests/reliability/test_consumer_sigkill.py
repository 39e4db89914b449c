"""Exactly-once effects under SIGKILL and lost leases (issue's "tests that must exist").

Three consumer processes (tests/reliability/effect_consumer.py: the real runner, a handler
that writes one effect row through its transaction) work through thousands of deliveries
while the test SIGKILLs one of them at random moments and restarts it, and, as the owner,
cuts random live leases short so another process claims the same delivery again while its
first holder is still at work. In the end every event has exactly one effect row, written in
the transaction of the delivery's one completion, though some deliveries were started more
than once.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.consumer_rows import consumer_role, define_type, publish_many
from tests.outboxctl import outboxctl_environment
from tests.reliability.effect_consumer import CONSUMER, EVENT_TYPE, TABLES

pytestmark = pytest.mark.integration

EVENTS = 2000
PROCESSES = 3
KILLS = 12
ROOT = Path(__file__).parents[2]
ORGANIZATIONS = [uuid.UUID(int=n) for n in range(1, 5)]
LIVE = "SELECT count(*) FROM events.consumer_deliveries WHERE state <> 'completed'"
# SKIP LOCKED: a lease a runner is recording right now is passed over, never waited for (in
# random order, two such waits could deadlock with the runner's record).
CUT_LEASES = """
UPDATE events.consumer_deliveries SET lease_expires_at = statement_timestamp()
WHERE state = 'leased' AND id IN (
    SELECT id FROM events.consumer_deliveries WHERE state = 'leased' ORDER BY random() LIMIT 3
    FOR UPDATE SKIP LOCKED
)
"""


def _start(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.reliability.effect_consumer"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )


async def test_sigkill_and_lost_leases_never_double_an_effect(
    database_url: str, connect_as, tmp_path: Path
):
    rng = random.Random(int(os.environ.get("CONSUMER_SIGKILL_SEED", "1716")))
    async with connect_as() as owner, consumer_role(owner, "shop") as role:
        await define_type(owner, EVENT_TYPE)
        await owner.execute(f"SELECT events.register_consumer('{CONSUMER}', 'shop', 20)")
        await owner.execute(f"SELECT events.subscribe('{CONSUMER}', '{EVENT_TYPE}', 1, 1)")
        await owner.execute(TABLES)
        await owner.execute(f"GRANT INSERT, SELECT ON public.consumer_effects TO {role}")
        await publish_many(
            owner, organization_ids=ORGANIZATIONS, event_type=EVENT_TYPE, count=EVENTS
        )
        env = outboxctl_environment(
            {
                "OUTBOX_DATABASE_URL": database_url,
                "OUTBOX_DATA_DIR": str(tmp_path),
                "OUTBOX_LOG_LEVEL": "warning",
                "OUTBOX_WORKER_POLL_SECONDS": "0.1",
                "OUTBOX_RETRY_SCHEDULE_SECONDS": "1",
                "EFFECT_CONSUMER_ROLE": role,
                "EFFECT_CONSUMER_LEASE_SECONDS": "1.5",
            }
        )
        log = tmp_path / "consumers.log"
        processes = [_start(env, log) for _ in range(PROCESSES)]
        kills = cut = 0
        deadline = time.monotonic() + 240
        try:
            while time.monotonic() < deadline:
                await asyncio.sleep(rng.uniform(0.3, 1.0))
                cursor = await owner.execute(CUT_LEASES)
                cut += cursor.rowcount
                if kills < KILLS:
                    victim = rng.randrange(PROCESSES)
                    processes[victim].send_signal(signal.SIGKILL)
                    processes[victim].wait()
                    processes[victim] = _start(env, log)
                    kills += 1
                cursor = await owner.execute(LIVE)
                (live,) = await cursor.fetchone()
                if live == 0 and kills == KILLS:
                    break
        finally:
            for process in processes:
                process.send_signal(signal.SIGTERM)
            for process in processes:
                process.wait(timeout=30)

        cursor = await owner.execute(LIVE)
        assert (0,) == await cursor.fetchone(), log.read_text()[-2000:]
        # Every event's effect exists exactly once.
        cursor = await owner.execute(
            "SELECT count(*), count(DISTINCT event_id), max(n) FROM ("
            " SELECT event_id, count(*) AS n FROM public.consumer_effects GROUP BY event_id) AS x"
        )
        assert (EVENTS, EVENTS, 1) == await cursor.fetchone()
        # Each effect was written in the transaction of its delivery's one completion (the
        # effect's top-level transaction: the attempt row's xmin).
        cursor = await owner.execute(
            "SELECT count(*) FROM public.consumer_effects AS e"
            " JOIN events.consumer_processing_attempts AS a"
            "   ON a.delivery_id = e.delivery_id AND a.outcome = 'completed'"
            " WHERE (e.txid % 4294967296)::text = a.xmin::text"
        )
        assert (EVENTS,) == await cursor.fetchone()
        # Batches: many effects commit in one transaction.
        cursor = await owner.execute("SELECT count(DISTINCT txid) FROM public.consumer_effects")
        (transactions,) = await cursor.fetchone()
        assert transactions < EVENTS / 2, transactions
        cursor = await owner.execute(
            "SELECT count(*) FROM events.consumer_processing_attempts WHERE outcome = 'completed'"
        )
        assert (EVENTS,) == await cursor.fetchone()
        # Duplicates were injected: some deliveries were started more than once.
        cursor = await owner.execute(
            "SELECT count(*) FROM (SELECT delivery_id FROM public.consumer_starts"
            " GROUP BY delivery_id HAVING count(*) > 1) AS again"
        )
        (restarted,) = await cursor.fetchone()
        assert restarted > 0
        assert (KILLS, True) == (kills, cut > 0)
        print(f"{EVENTS} events, {kills} SIGKILLs, {cut} leases cut, {restarted} started twice")
