"""``outboxctl worker --processes 2``: two real worker processes under the supervisor."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess

import psycopg
import pytest

from tests.integration.providers.smtp_stand_in import SmtpStandIn
from tests.integration.worker.conftest import Enqueue
from tests.integration.worker.test_process import (
    OUTBOXCTL,
    _attempts,
    _delivered_ids,
    _env,
    _states,
)

pytestmark = pytest.mark.integration

MESSAGES = 40


async def _lease_owners(database_url: str) -> set[str]:
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        rows = await (
            await conn.execute(
                "SELECT DISTINCT lease_owner FROM outbox.messages WHERE lease_owner IS NOT NULL"
            )
        ).fetchall()
    return {str(row[0]) for row in rows}


async def _until_two_owners(database_url: str, within: float = 60) -> set[str]:
    deadline = asyncio.get_running_loop().time() + within
    while len(owners := await _lease_owners(database_url)) < 2:
        if asyncio.get_running_loop().time() > deadline:
            pytest.fail(f"never saw two lease owners: {owners}")
        await asyncio.sleep(0.05)
    return owners


async def test_two_processes_drain_the_queue_between_them_each_message_once(
    database_url: str, worker_env: dict[str, str], enqueue: Enqueue, smtp: SmtpStandIn
) -> None:
    # Slow enough sends (0.3 s each, 2 at a time per process) that one process alone would
    # take 6 s: the second one starts well within that and takes its share.
    smtp.behaviour.stall_data = 0.3
    codes = await enqueue(MESSAGES)
    drained = await asyncio.to_thread(
        subprocess.run,
        [
            OUTBOXCTL,
            "worker",
            "--processes",
            "2",
            "--drain",
            "--lanes",
            "security",
            "--concurrency",
            "2",
            "--batch-size",
            "2",
        ],
        env=_env(worker_env, smtp),
        capture_output=True,
        timeout=120,
        check=False,
    )

    assert 0 == drained.returncode, drained.stderr.decode()[-3000:]
    assert {"published": MESSAGES} == await _states(database_url)  # complete
    delivered = _delivered_ids(smtp)
    assert sorted(map(str, codes)) == sorted(delivered)  # each message once: disjoint
    assert MESSAGES == await _attempts(database_url)  # no claim was ever taken twice
    report = json.loads(drained.stdout)
    assert MESSAGES == report["security"]["published"]
    processes = report["processes"]
    assert 2 == len({process["pid"] for process in processes})
    assert [MESSAGES] == [sum(p["security"]["published"] for p in processes)]
    assert all(p["security"]["published"] > 0 for p in processes), processes
    assert b"worker.supervisor_started" in drained.stderr


async def test_sigterm_reaches_every_process_and_each_stops_gracefully(
    database_url: str, worker_env: dict[str, str], enqueue: Enqueue, smtp: SmtpStandIn
) -> None:
    smtp.behaviour.stall_data = 1.0
    await enqueue(16)
    supervisor = await asyncio.create_subprocess_exec(
        OUTBOXCTL,
        "worker",
        "--processes",
        "2",
        "--lanes",
        "security",
        "--concurrency",
        "2",
        "--batch-size",
        "2",
        env=_env(worker_env, smtp, OUTBOX_WORKER_SHUTDOWN_GRACE_SECONDS="20"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        owners = await _until_two_owners(database_url)  # both processes hold a batch
        supervisor.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(supervisor.communicate(), 60)
    finally:
        if supervisor.returncode is None:
            supervisor.kill()
    assert 0 == supervisor.returncode, stderr.decode()[-3000:]
    assert 2 == len(owners)  # two workers, two lease owner names
    states = await _states(database_url)
    assert 0 == states.get("leased", 0), states  # every batch in flight was recorded
    assert 2 == stderr.count(b'"worker.stopping"')  # each child stopped on the signal


async def test_a_child_killed_soon_after_its_start_stops_the_others_and_the_supervisor(
    worker_env: dict[str, str], smtp: SmtpStandIn
) -> None:
    """Dying within 10 s of its start is not restarted (a restart would only repeat it)."""
    supervisor = await asyncio.create_subprocess_exec(
        OUTBOXCTL,
        "worker",
        "--processes",
        "2",
        "--lanes",
        "security",
        env=_env(worker_env, smtp),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert supervisor.stderr is not None
        started = json.loads(await asyncio.wait_for(supervisor.stderr.readline(), 60))
        assert "worker.supervisor_started" == started["event"]
        victim = int(started["pids"].split(",")[0])
        os.kill(victim, signal.SIGKILL)
        _, stderr = await asyncio.wait_for(supervisor.communicate(), 60)
    finally:
        if supervisor.returncode is None:
            supervisor.kill()
    assert 128 + signal.SIGKILL == supervisor.returncode
    failed = [json.loads(line) for line in stderr.splitlines() if b'"worker.child_failed"' in line]
    assert [victim] == [line["pid"] for line in failed]
