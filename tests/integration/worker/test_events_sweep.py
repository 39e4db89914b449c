"""``outboxctl sweep retention`` covers the tenant events: old final events go, live ones stay."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from uuid import UUID

import pytest

from tests.events_rows import EventRows
from tests.outboxctl import run_outboxctl

pytestmark = pytest.mark.integration

ORG = UUID("00000000-0000-4000-8000-0000000000aa")


async def test_the_retention_sweep_purges_events_past_thirty_days(
    database_url: str, tmp_path: Path
) -> None:
    rows = EventRows(database_url)
    await rows.setup()
    old, recent = await rows.append(ORG, "a"), await rows.append(ORG, "b")
    await rows.publish(old, recent)
    await rows.age(old, timedelta(days=31))
    live = await rows.append(ORG, "c")

    result = run_outboxctl(
        "sweep",
        "retention",
        variables={
            "OUTBOX_DATABASE_URL": database_url,
            "OUTBOX_WORKER_DB_ROLE": "outbox_worker",
            "OUTBOX_DATA_DIR": str(tmp_path),
        },
    )

    assert 0 == result.returncode, result.stderr[-2000:]
    assert {"retention": 0, "eventsRetention": 1} == json.loads(result.stdout)
    left = {row[0] for row in await rows.rows("SELECT id FROM events.domain_events")}
    assert {recent, live} == left
