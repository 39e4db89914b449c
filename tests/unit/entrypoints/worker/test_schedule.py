"""Scheduled sweeps run repeatedly and survive a failed run."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from outbox.entrypoints.worker.schedule import Every
from tests.fakes.telemetry import RecordingTelemetry


async def test_a_failed_run_is_logged_by_name_and_the_next_run_happens() -> None:
    runs: list[int] = []

    async def job() -> int:
        runs.append(1)
        if len(runs) == 1:
            raise RuntimeError("secret 123456 to alice@example.com")
        return 0

    telemetry = RecordingTelemetry()
    task = asyncio.create_task(
        Every(name="expiry", interval=timedelta(seconds=0.005), job=job, telemetry=telemetry).run()
    )
    while len(runs) < 3:
        await asyncio.sleep(0.005)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    [failure] = telemetry.named("sweep.failed")
    assert {"sweep": "expiry", "error": "RuntimeError", "code": ""} == failure.fields
    assert task.cancelled()
