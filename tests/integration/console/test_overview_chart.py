"""The overview's charts read both outboxes: the tenant events waiting and published this hour."""

from __future__ import annotations

import re
from uuid import UUID

import psycopg
import pytest

from tests.integration.console.world import ConsoleWorld

pytestmark = pytest.mark.integration

STAFF = "staff@example.com"
PLATFORM = UUID(int=0)  # identity's account events belong to the platform organization
WAITING = 3


def _waiting_heights(html: str) -> list[float]:
    match = re.search(r'data-series="waiting"[^>]* points="([^"]+)"', html)
    assert match is not None, html
    return [float(point.split(",")[1]) for point in match.group(1).split()]


async def _append_unpublished(world: ConsoleWorld, count: int) -> None:
    """``count`` account events, appended as the identity module does and not yet published."""
    async with await psycopg.AsyncConnection.connect(
        world.staff.api.database_url, autocommit=True
    ) as conn:
        await conn.execute("SET ROLE identity_service")
        for n in range(count):
            await conn.execute(
                "SELECT events.append_domain_event(%s, 'identity.account_verified', 1,"
                " 'identity', %s, %s, '{}'::jsonb, now())",
                (PLATFORM, f"chart-{n}", f"chart-{n}"),
            )


async def test_the_events_chart_counts_records_waiting_since_they_were_created(
    world: ConsoleWorld,
):
    """Records created twenty minutes ago and still pending waited from that minute on."""
    await world.account(STAFF)
    client = world.client()
    await world.stepped_up(client, STAFF)  # delivering the code publishes the events so far
    [(published,)] = await world.staff.api.rows(
        "SELECT count(*) FROM events.outbox_records WHERE state = 'published'"
    )
    await _append_unpublished(world, WAITING)
    await world.staff.api.rows(
        "UPDATE events.outbox_records SET created_at = now() - interval '20 minutes'"
        " WHERE state IN ('pending', 'leased') RETURNING id"
    )

    response = await client.get("/console/overview/live")

    assert 200 == response.status_code, response.text
    html = response.text
    assert "Security outbox: the last hour" in html
    assert "Tenant events outbox: the last hour" in html
    assert f"waiting: {WAITING} now, at most {WAITING}" in html
    assert f"published: {published} in all" in html
    heights = _waiting_heights(html)
    assert 60 == len(heights)
    before, after = set(heights[:38]), set(heights[41:])  # either side of twenty minutes ago
    assert 1 == len(before)
    assert 1 == len(after)
    assert min(after) < min(before)  # higher on the chart: more waiting
