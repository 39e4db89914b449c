"""The doctor's readings as gauges on the admin listener's /metrics, through the real app
(its own login, staff_service): the hot tables' rows and sizes, each lane's due work, the
relay's last publication, autovacuum, the horizon, and what the doctor would report."""

from __future__ import annotations

from collections.abc import AsyncIterator
from uuid import UUID

import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.events_rows import EventRows
from tests.security.http_app import App, serving

pytestmark = pytest.mark.integration

ORG = UUID("00000000-0000-4000-8000-0000000000d7")


@pytest.fixture
async def app(database_url: str) -> AsyncIterator[App]:
    async with serving(database_url) as running:
        yield running


async def _samples(app: App) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    scraped = await app.admin.get("/metrics")
    assert 200 == scraped.status_code
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(scraped.text)
        for sample in family.samples
        if sample.name.startswith(
            ("outbox_db_", "outbox_lane_", "outbox_relay_last", "outbox_doctor")
        )
    }


async def test_the_admin_listener_exports_the_doctors_readings(app: App, database_url: str) -> None:
    rows = EventRows(database_url)
    await rows.setup()
    for n in range(3):
        await rows.append(ORG, f"order-{n}")
    published = await rows.append(ORG, "order-9")
    await rows.publish(published)
    holder = await psycopg.AsyncConnection.connect(database_url)
    try:
        await holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        await holder.execute("SELECT 1")  # takes the snapshot: holds the horizon
        [(autovacuum,)] = await rows.rows("SHOW autovacuum")
        samples = await _samples(app)
    finally:
        await holder.close()

    assert 3 == samples[("outbox_lane_due", (("lane", "events"),))]
    assert samples[("outbox_lane_oldest_due_age_seconds", (("lane", "events"),))] >= 0
    assert ("outbox_lane_due", (("lane", "security"),)) in samples
    assert ("outbox_lane_due", (("lane", "consumers"),)) in samples
    assert samples[("outbox_relay_last_published_age_seconds", ())] < 60
    assert samples[("outbox_db_table_size_bytes", (("table", "events.outbox_records"),))] > 0
    assert ("outbox_db_table_dead_rows", (("table", "outbox.messages"),)) in samples
    assert (1.0 if autovacuum == "on" else 0.0) == samples[("outbox_db_autovacuum", ())]
    # staff_service alone sees no other login's transaction: without pg_monitor granted to the
    # admin login (docs/operations.md), the holder stays invisible to the gauge; outboxctl
    # doctor, the database operator's, names it (test_doctor.py).
    assert 0 == samples[("outbox_db_horizon_age_seconds", ())]
    if autovacuum != "on":
        assert (
            1
            == samples[
                ("outbox_doctor_findings", (("check", "autovacuum"), ("severity", "critical")))
            ]
        )
