"""The events lane of a real ``outboxctl worker``: tenant events published, lane by lane."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from tests.events_sql import SALES, append, onboard, rows
from tests.outboxctl import run_outboxctl

pytestmark = pytest.mark.integration

ACME = uuid.UUID("0190aaaa-0000-7000-8000-000000000001")
GLOBEX = uuid.UUID("0190aaaa-0000-7000-8000-000000000002")
STATES = "SELECT state, count(*) FROM events.outbox_records GROUP BY state ORDER BY state"


@pytest.fixture
async def appended(connect_as) -> list[uuid.UUID]:
    """Three orders of two organizations each, two events on one order, appended as `sales`."""
    async with connect_as() as conn:
        await onboard(conn)
    async with connect_as(SALES) as conn:
        return [
            await append(conn, organization, f"order-{n % 3}")
            for organization in (ACME, GLOBEX)
            for n in range(4)
        ]


def _drain(database_url: str, tmp_path: Path, *lanes: str) -> dict[str, dict[str, int]]:
    result = run_outboxctl(
        "worker",
        "--drain",
        *(("--lanes", ",".join(lanes)) if lanes else ()),
        variables={
            "OUTBOX_DATABASE_URL": database_url,
            "OUTBOX_WORKER_DB_ROLE": "outbox_worker",
            "OUTBOX_DATA_DIR": str(tmp_path),
            "OUTBOX_LOG_FORMAT": "json",
            "OUTBOX_EVENTS_BATCH_SIZE": "3",  # several batches, organizations sharing each
        },
    )
    assert 0 == result.returncode, result.stderr[-2000:]
    totals: dict[str, dict[str, int]] = json.loads(result.stdout)
    return totals


async def test_the_events_lane_publishes_the_events_of_every_organization(
    appended, connect_as, database_url: str, tmp_path: Path
) -> None:
    totals = _drain(database_url, tmp_path, "events")

    assert ["events"] == list(totals)
    assert (8, 8, 0) == (
        totals["events"]["claimed"],
        totals["events"]["published"],
        totals["events"]["deadLettered"],
    )
    async with connect_as() as conn:
        assert [("published", 8)] == await rows(conn, STATES)
        published = await rows(
            conn,
            "SELECT p.organization_id, e.aggregate_id, e.append_sequence"
            " FROM events.domain_event_publications p"
            " JOIN events.domain_events e ON e.id = p.domain_event_id"
            " ORDER BY p.publication_sequence",
        )
    assert {ACME, GLOBEX} == {organization for organization, _, _ in published}
    for key in {(o, a) for o, a, _ in published}:  # each aggregate in append order
        sequences = [s for o, a, s in published if (o, a) == key]
        assert sorted(sequences) == sequences


async def test_the_security_lane_alone_leaves_the_events_pending(
    appended, connect_as, database_url: str, tmp_path: Path
) -> None:
    totals = _drain(database_url, tmp_path, "security")

    assert ["security"] == list(totals)
    async with connect_as() as conn:
        assert [("pending", 8)] == await rows(conn, STATES)


async def test_a_worker_drains_every_lane_by_default(
    appended, connect_as, database_url: str, tmp_path: Path
) -> None:
    totals = _drain(database_url, tmp_path)

    assert ["security", "events", "consumers"] == list(totals)
    assert 8 == totals["events"]["published"]
    assert 0 == totals["security"]["claimed"]
