"""``outboxctl worker`` as a real process: graceful stop during slow sends; SIGKILL mid-batch."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.integration.providers.network import free_port
from tests.integration.providers.smtp_stand_in import SmtpStandIn
from tests.integration.worker.conftest import Enqueue
from tests.outboxctl import outboxctl_environment

pytestmark = pytest.mark.integration

OUTBOXCTL = str(Path(sys.executable).with_name("outboxctl"))


def _env(worker_env: dict[str, str], smtp: SmtpStandIn, **extra: str) -> dict[str, str]:
    return {
        **outboxctl_environment({}),
        **worker_env,
        "OUTBOX_CHANNEL_EMAIL": "smtp",
        "OUTBOX_SMTP_HOST": "127.0.0.1",
        "OUTBOX_SMTP_PORT": str(smtp.port),
        "OUTBOX_SMTP_SECURITY": "plain",
        "OUTBOX_SMTP_FROM": "Outbox <no-reply@outbox.test>",
        **extra,
    }


def _delivered_ids(smtp: SmtpStandIn) -> list[str]:
    ids = []
    for accepted in smtp.accepted:
        match = re.fullmatch(r"<([0-9a-f-]{36})@outbox\.test>", str(accepted.message["Message-ID"]))
        assert match is not None
        ids.append(match.group(1))
    return ids


async def _states(database_url: str) -> dict[str, int]:
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        rows = await (
            await conn.execute("SELECT state, count(*) FROM outbox.messages GROUP BY state")
        ).fetchall()
    return dict(rows)


async def _wait_for(database_url: str, state: str, count: int, within: float = 20) -> None:
    deadline = time.monotonic() + within
    while (await _states(database_url)).get(state, 0) < count:
        if time.monotonic() > deadline:
            pytest.fail(f"never saw {count} {state} rows: {await _states(database_url)}")
        await asyncio.sleep(0.05)


async def _attempts(database_url: str) -> int:
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        row = await (await conn.execute("SELECT count(*) FROM outbox.attempts")).fetchone()
    assert row is not None
    return int(row[0])


async def test_sigterm_during_slow_sends_finishes_them_and_leaves_no_lease(
    database_url: str, worker_env: dict[str, str], enqueue: Enqueue, smtp: SmtpStandIn
) -> None:
    smtp.behaviour.stall_data = 1.5
    codes = await enqueue(8)
    worker = await asyncio.create_subprocess_exec(
        OUTBOXCTL,
        "worker",
        "--concurrency",
        "8",
        env=_env(worker_env, smtp, OUTBOX_WORKER_SHUTDOWN_GRACE_SECONDS="20"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        await _wait_for(database_url, "leased", 8)
        await asyncio.sleep(0.3)  # the sends are in flight, stalled in DATA
        worker.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(worker.communicate(), 30)
    finally:
        if worker.returncode is None:
            worker.kill()
    assert 0 == worker.returncode, stderr.decode()[-2000:]
    assert {"published": 8} == await _states(database_url)
    assert sorted(str(i) for i in codes) == sorted(_delivered_ids(smtp))
    assert 8 == await _attempts(database_url)  # recorded once each, nothing reclaimed
    assert b"worker.stopping" in stderr


async def test_sigkill_mid_batch_then_a_new_worker_loses_nothing(
    database_url: str, worker_env: dict[str, str], enqueue: Enqueue, smtp: SmtpStandIn
) -> None:
    smtp.behaviour.stall_data = 3
    codes = await enqueue(6)
    env = _env(worker_env, smtp, OUTBOX_WORKER_LEASE_SECONDS="1")
    victim = await asyncio.create_subprocess_exec(
        OUTBOXCTL,
        "worker",
        "--concurrency",
        "6",
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        await _wait_for(database_url, "leased", 6)
        victim.send_signal(signal.SIGKILL)
        await asyncio.wait_for(victim.wait(), 10)
    finally:
        if victim.returncode is None:
            victim.kill()
    assert {"leased": 6} == await _states(database_url)
    await asyncio.sleep(1.1)  # the dead worker's leases run out
    smtp.behaviour.stall_data = 0
    survivor = await asyncio.to_thread(
        subprocess.run,
        [OUTBOXCTL, "worker", "--drain"],
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert 0 == survivor.returncode, survivor.stderr.decode()[-2000:]
    assert {"published": 6} == await _states(database_url)
    report = json.loads(survivor.stdout)["security"]  # --drain's totals, per lane, camelCase
    assert (6, 6, 0, 0) == (
        report["claimed"],
        report["published"],
        report["deadLettered"],
        report["leaseLost"],
    )
    delivered = _delivered_ids(smtp)
    assert set(map(str, codes)) == set(delivered)  # lost = 0
    assert len(delivered) <= 6 + 6  # duplicates only for the sends in flight at the kill


async def test_a_worker_serves_its_metrics_on_the_configured_port(
    database_url: str, worker_env: dict[str, str], enqueue: Enqueue, smtp: SmtpStandIn
) -> None:
    await enqueue(3)
    port = free_port()
    worker = await asyncio.create_subprocess_exec(
        OUTBOXCTL,
        "worker",
        env=_env(worker_env, smtp, OUTBOX_WORKER_METRICS_PORT=str(port)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        await _wait_for(database_url, "published", 3)
        async with httpx.AsyncClient(timeout=5) as client:
            text = (await client.get(f"http://127.0.0.1:{port}/metrics")).text
        worker.send_signal(signal.SIGTERM)
        assert 0 == await asyncio.wait_for(worker.wait(), 30)
    finally:
        if worker.returncode is None:
            worker.kill()
    published = re.search(r'outbox_attempts_total\{[^}]*outcome="published"[^}]*\} ([0-9.]+)', text)
    assert published is not None, text[:2000]
    assert 3.0 == float(published.group(1))
