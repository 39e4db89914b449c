"""``outboxctl worker --lane-processes``: each lane in a worker process of its own, the
security lane's reserved slot in one more."""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid
from typing import Any

import pytest

from tests.events_sql import SALES, append, onboard, rows
from tests.integration.providers.smtp_stand_in import SmtpStandIn
from tests.integration.worker.conftest import Enqueue
from tests.integration.worker.test_process import OUTBOXCTL, _delivered_ids, _env, _states

pytestmark = pytest.mark.integration

ORG = uuid.UUID("0190aaaa-0000-7000-8000-0000000000f1")
CODES = 12
EVENTS = 9


async def _drain_apart(worker_env: dict[str, str], smtp: SmtpStandIn, lanes: str) -> Any:
    """``outboxctl worker --lane-processes --drain --lanes LANES``: its JSON report."""
    drained = await asyncio.to_thread(
        subprocess.run,
        [OUTBOXCTL, "worker", "--lane-processes", "--drain", "--lanes", lanes],
        env=_env(worker_env, smtp),
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert 0 == drained.returncode, drained.stderr.decode()[-3000:]
    return json.loads(drained.stdout)


async def test_each_lane_drains_in_a_process_of_its_own(
    database_url: str,
    worker_env: dict[str, str],
    enqueue: Enqueue,
    smtp: SmtpStandIn,
    connect_as,
) -> None:
    codes = await enqueue(CODES)
    async with connect_as() as conn:
        await onboard(conn)
    async with connect_as(SALES) as conn:
        for n in range(EVENTS):
            await append(conn, ORG, f"order-{n % 4}")

    report = await _drain_apart(worker_env, smtp, "security,events")

    assert (CODES, EVENTS) == (report["security"]["published"], report["events"]["published"])
    processes = report["processes"]
    assert 3 == len({process["pid"] for process in processes})
    # One lane each: the security lane as two (its batches, then its reserved slot alone),
    # the events lane as one; none ran another's lane.
    assert [["security"], ["security"], ["events"]] == [
        [lane for lane in process if lane != "pid"] for process in processes
    ]
    assert CODES == sum(process["security"]["published"] for process in processes[:2])
    assert {"published": CODES} == await _states(database_url)
    assert sorted(map(str, codes)) == sorted(_delivered_ids(smtp))
    async with connect_as() as conn:
        assert [("published", EVENTS)] == await rows(
            conn, "SELECT state, count(*) FROM events.outbox_records GROUP BY state"
        )


async def test_one_lane_needs_no_second_process(
    database_url: str, worker_env: dict[str, str], enqueue: Enqueue, smtp: SmtpStandIn
) -> None:
    await enqueue(3)
    report = await _drain_apart(worker_env, smtp, "security")

    assert ["security"] == list(report)  # a worker of its own, not a supervisor of one
    assert 3 == report["security"]["published"]
