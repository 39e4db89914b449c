"""The staff routes over the tenant events outbox through the real app (both listeners, real
telemetry, the API pool acting as identity_service): gating, reads, repairs and the
per-organization gauges of /metrics."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any
from uuid import UUID

import attrs
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.events_rows import EventRows
from tests.security.http_app import App, serving

pytestmark = pytest.mark.integration

BASE = "/platform-admin/tenant-events"
STAFF = "staff@example.com"
ORG = UUID("00000000-0000-4000-8000-0000000000e1")


@attrs.frozen
class Staff:
    token: str
    elevation: str

    def headers(self, **extra: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}", "Elevation-Token": self.elevation, **extra}


@pytest.fixture
async def app(database_url: str) -> AsyncIterator[App]:
    async with serving(database_url) as running:
        yield running


async def _staff(app: App, rows: EventRows, email: str = STAFF, *, grant: bool = True) -> Staff:
    await app.signed_up(email)
    if grant:
        await rows.rows("SELECT * FROM outbox.grant_staff(%s)", email)
    # The staff member's sign-up appended identity's own event (0022); not this test's backlog.
    await rows.rows("DELETE FROM events.domain_events WHERE producer_module_code = 'identity'")
    return Staff(*await app.staff_elevated(email))


def _type(response: httpx.Response) -> str:
    assert "application/problem+json" == response.headers["content-type"], response.text
    return str(response.json()["type"]).removeprefix("urn:outbox:problem:")


async def _parked(rows: EventRows) -> tuple[UUID, UUID, UUID]:
    dead = await rows.append(ORG, "order-1")
    later = await rows.append(ORG, "order-1")
    await rows.dead_letter(dead)
    return dead, later, await rows.dead_record(dead)


async def _gauges(app: App) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    scraped = await app.admin.get("/metrics")
    assert 200 == scraped.status_code
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(scraped.text)
        if family.name.startswith("outbox_tenant_events")
        for sample in family.samples
    }


@pytest.mark.parametrize(
    "path",
    [
        "/backlog",
        "/dead-letters",
        "/parked-aggregates",
        "/events/00000000-0000-4000-8000-000000000001",
    ],
)
async def test_every_read_needs_staff_and_a_fresh_step_up(app: App, rows: EventRows, path):
    stranger = await _staff(app, rows, "stranger@example.com", grant=False)
    staff = await _staff(app, rows)

    anonymous = await app.admin.get(BASE + path)
    not_staff = await app.admin.get(BASE + path, headers=stranger.headers())
    no_step_up = await app.admin.get(
        BASE + path, headers={"Authorization": f"Bearer {staff.token}"}
    )

    assert (401, "unauthenticated") == (anonymous.status_code, _type(anonymous))
    assert (403, "staff-required") == (not_staff.status_code, _type(not_staff))
    assert (403, "step-up-required") == (no_step_up.status_code, _type(no_step_up))


async def test_staff_read_the_backlog_dead_letters_parked_aggregates_and_an_event(
    app: App, rows: EventRows
):
    staff = await _staff(app, rows)
    dead, _, dead_letter = await _parked(rows)

    backlog = await app.admin.get(BASE + "/backlog", headers=staff.headers())
    letters = await app.admin.get(
        BASE + "/dead-letters", params={"unresolved": "true", "limit": 1}, headers=staff.headers()
    )
    parked = await app.admin.get(
        BASE + "/parked-aggregates", params={"organizationId": str(ORG)}, headers=staff.headers()
    )
    event = await app.admin.get(f"{BASE}/events/{dead}", headers=staff.headers())
    unknown = await app.admin.get(f"{BASE}/events/{uuid.uuid4()}", headers=staff.headers())

    assert 200 == backlog.status_code, backlog.text
    assert [
        {
            "organizationId": str(ORG),
            "pending": 1,
            "leased": 0,
            "oldestDueAgeSeconds": None,
            "deadLetters": 1,
            "parkedAggregates": 1,
        }
    ] == backlog.json()["items"]
    [letter] = letters.json()["items"]
    assert (str(dead_letter), None) == (letter["id"], letter["resolution"])
    assert False is letters.json()["pageInfo"]["hasNextPage"]
    [aggregate] = parked.json()["items"]
    assert (str(dead_letter), "order-1", 1) == (
        aggregate["deadLetterId"],
        aggregate["aggregateId"],
        aggregate["waiting"],
    )
    assert 200 == event.status_code
    assert (str(dead), 8) == (event.json()["id"], event.json()["payloadBytes"])
    assert "payload" not in event.json()
    assert (404, "not-found") == (unknown.status_code, _type(unknown))


async def test_a_release_over_http_is_idempotent_and_lets_the_aggregate_flow(
    app: App, rows: EventRows
):
    staff = await _staff(app, rows)
    _, later, dead_letter = await _parked(rows)
    path = f"{BASE}/dead-letters/{dead_letter}/releases"
    body = {"reason": "order cancelled, ticket 4"}

    first = await app.admin.post(
        path, json=body, headers=staff.headers(**{"Idempotency-Key": "r-1"})
    )
    replay = await app.admin.post(
        path, json=body, headers=staff.headers(**{"Idempotency-Key": "r-1"})
    )
    refused = await app.admin.post(
        f"{BASE}/dead-letters/{dead_letter}/republications",
        json=body,
        headers=staff.headers(**{"Idempotency-Key": "r-2"}),
    )
    reused = await app.admin.post(
        f"{BASE}/dead-letters/{uuid.uuid4()}/releases",
        json=body,
        headers=staff.headers(**{"Idempotency-Key": "r-1"}),
    )

    assert 201 == first.status_code, first.text
    assert {"action": "release", "deadLetterId": str(dead_letter), "recordId": None} == {
        k: first.json()[k] for k in ("action", "deadLetterId", "recordId")
    }
    assert (201, "true") == (replay.status_code, replay.headers["Idempotent-Replayed"])
    assert (409, "repair-refused", "already_released") == (
        refused.status_code,
        _type(refused),
        refused.json()["reason"],
    )
    assert (422, "idempotency-key-reused") == (reused.status_code, _type(reused))
    assert [later] == [row[1] for row in await rows.claim()]
    [(elevation_id, reason)] = await rows.rows(
        "SELECT elevation_id, reason FROM events.operator_audit"
    )
    assert elevation_id is not None
    assert body["reason"] == reason


async def test_a_republication_over_http_goes_before_the_later_events(app: App, rows: EventRows):
    staff = await _staff(app, rows)
    dead, _, dead_letter = await _parked(rows)

    response = await app.admin.post(
        f"{BASE}/dead-letters/{dead_letter}/republications",
        json={"reason": "target fixed"},
        headers=staff.headers(**{"Idempotency-Key": "p-1"}),
    )

    assert 201 == response.status_code, response.text
    record_id = UUID(response.json()["recordId"])
    assert [(record_id, dead)] == [(row[0], row[1]) for row in await rows.claim()]


@pytest.mark.parametrize(
    ("body", "key"),
    [({}, "k"), ({"reason": ""}, "k"), ({"reason": "x" * 501}, "k"), ({"reason": "ok"}, None)],
    ids=["no-reason", "empty-reason", "long-reason", "no-key"],
)
async def test_a_repair_without_a_reason_or_a_key_is_400(
    app: App, rows: EventRows, body: dict[str, Any], key: str | None
):
    staff = await _staff(app, rows)
    headers = staff.headers(**({"Idempotency-Key": key} if key else {}))

    response = await app.admin.post(
        f"{BASE}/dead-letters/{uuid.uuid4()}/releases", json=body, headers=headers
    )

    assert (400, "validation-error") == (response.status_code, _type(response))


async def test_metrics_show_the_top_organizations_and_one_other(app: App, rows: EventRows):
    organizations = [uuid.uuid4() for _ in range(11)]
    for count, organization in enumerate(organizations, start=1):
        for n in range(count):
            await rows.append(organization, f"m-{n}")

    gauges = await _gauges(app)
    pending = {
        dict(labels)["organization"]: value
        for (name, labels), value in gauges.items()
        if name == "outbox_tenant_events" and dict(labels)["state"] == "pending"
    }
    newcomer = uuid.uuid4()
    for n in range(12):
        await rows.append(newcomer, f"n-{n}")
    after = await _gauges(app)

    assert 11 == len(pending)  # ten organizations and "other"
    assert 1.0 == pending["other"]  # the smallest backlog, summed into the rest
    assert 11.0 == pending[str(organizations[-1])]
    pending_after = {
        dict(labels)["organization"]: value
        for (name, labels), value in after.items()
        if name == "outbox_tenant_events" and dict(labels)["state"] == "pending"
    }
    # The newcomer entered the top; the organization it pushed out is summed, not kept.
    assert 11 == len(pending_after)
    assert 12.0 == pending_after[str(newcomer)]
    assert str(organizations[1]) not in pending_after
    assert 1.0 + 2.0 == pending_after["other"]
