"""Tenant events and consumers as first-class in the staff routes, through the real admin app
(role staff_service): search events by filter, preview and apply a bulk republish, release or
cancel (counting exactly what changes, one audit row each, a resend changing nothing more),
the consumers' lag, dead letters, replay, pause and resume (audited), and the workers view."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any
from uuid import UUID

import httpx
import pytest

from tests.events_rows import EventRows
from tests.integration.operator.test_events_http import Staff, _staff, _type
from tests.security.http_app import App, serving

pytestmark = pytest.mark.integration

EVENTS = "/platform-admin/tenant-events"
CONSUMERS = "/platform-admin/consumers"
WORKERS = "/platform-admin/workers"
ORG = UUID("00000000-0000-4000-8000-0000000000f1")
OTHER_ORG = UUID("00000000-0000-4000-8000-0000000000f2")
NOTICES = "identity.security_notices"


@pytest.fixture
async def app(database_url: str) -> AsyncIterator[App]:
    async with serving(database_url) as running:
        yield running


async def _parked(rows: EventRows, org: UUID, aggregate: str) -> UUID:
    dead = await rows.append(org, aggregate)
    await rows.append(org, aggregate)  # waits behind it
    await rows.dead_letter(dead)
    return await rows.dead_record(dead)


async def _bulk(app: App, staff: Staff, key: str, **body: Any) -> httpx.Response:
    return await app.admin.post(
        EVENTS + "/bulk-actions", json=body, headers=staff.headers(**{"Idempotency-Key": key})
    )


REASON = {"reason": "why"}
BULK = {"action": "release", "asOf": "2026-12-01T00:00:00Z", **REASON}


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", EVENTS + "/events", None),
        ("GET", EVENTS + "/bulk-preview?action=release", None),
        ("POST", EVENTS + "/bulk-actions", BULK),
        ("GET", CONSUMERS + "/", None),
        ("GET", f"{CONSUMERS}/{NOTICES}/dead-letters", None),
        ("POST", f"{CONSUMERS}/{NOTICES}/replays", {"fromSequence": 1, **REASON}),
        ("POST", f"{CONSUMERS}/{NOTICES}/pause", REASON),
        ("POST", f"{CONSUMERS}/{NOTICES}/resume", REASON),
        ("GET", WORKERS + "/", None),
    ],
)
async def test_every_new_route_needs_staff_and_a_step_up(
    app: App, rows: EventRows, method: str, path: str, body: dict[str, Any] | None
) -> None:
    stranger = await _staff(app, rows, "stranger@example.com", grant=False)
    staff = await _staff(app, rows)
    key = {"Idempotency-Key": "k-1"}

    anonymous = await app.admin.request(method, path, json=body, headers=key)
    not_staff = await app.admin.request(method, path, json=body, headers=stranger.headers(**key))
    no_step_up = await app.admin.request(
        method, path, json=body, headers={"Authorization": f"Bearer {staff.token}", **key}
    )

    assert (401, "unauthenticated") == (anonymous.status_code, _type(anonymous))
    assert (403, "staff-required") == (not_staff.status_code, _type(not_staff))
    assert (403, "step-up-required") == (no_step_up.status_code, _type(no_step_up))


async def test_staff_search_events_by_state_organization_and_aggregate(
    app: App, rows: EventRows
) -> None:
    staff = await _staff(app, rows)
    dead = await _parked(rows, ORG, "order-1")
    waiting = [await rows.append(ORG, "order-2") for _ in range(3)]
    await rows.append(OTHER_ORG, "order-2")

    pending = await app.admin.get(
        EVENTS + "/events",
        params={"state": "pending", "organizationId": str(ORG), "aggregateId": "order-2"},
        headers=staff.headers(),
    )
    first = await app.admin.get(
        EVENTS + "/events",
        params={"organizationId": str(ORG), "limit": 2},
        headers=staff.headers(),
    )
    cursor = first.json()["pageInfo"]["endCursor"]
    rest = await app.admin.get(
        EVENTS + "/events",
        params={"organizationId": str(ORG), "before": cursor, "limit": 10},
        headers=staff.headers(),
    )
    bad_state = await app.admin.get(
        EVENTS + "/events", params={"state": "lost"}, headers=staff.headers()
    )

    assert 200 == pending.status_code, pending.text
    assert [str(e) for e in reversed(waiting)] == [e["id"] for e in pending.json()["items"]]
    assert {"pending"} == {e["state"] for e in pending.json()["items"]}
    assert first.json()["pageInfo"]["hasNextPage"]
    states = [e["state"] for e in rest.json()["items"]]
    assert ["pending", "pending", "dead_lettered"] == states
    assert str(dead) == rest.json()["items"][-1]["recordId"]
    assert (400, "validation-error") == (bad_state.status_code, _type(bad_state))


async def test_a_bulk_release_previews_and_changes_exactly_the_unresolved_dead_letters(
    app: App, rows: EventRows
) -> None:
    staff = await _staff(app, rows)
    dead = [await _parked(rows, ORG, f"order-{n}") for n in range(3)]
    await _parked(rows, OTHER_ORG, "order-9")
    released_one = await app.admin.post(
        f"{EVENTS}/dead-letters/{dead[0]}/releases",
        json={"reason": "looked at it"},
        headers=staff.headers(**{"Idempotency-Key": "one"}),
    )
    assert 201 == released_one.status_code, released_one.text

    preview = await app.admin.get(
        EVENTS + "/bulk-preview",
        params={"action": "release", "organizationId": str(ORG)},
        headers=staff.headers(),
    )
    body = {
        "action": "release",
        "organizationId": str(ORG),
        "asOf": preview.json()["asOf"],
        "reason": "broker fixed",
    }
    applied = await _bulk(app, staff, "form-1", **body)
    resent = await _bulk(app, staff, "form-1", **body)
    no_reason = await _bulk(app, staff, "form-2", **{**body, "reason": ""})

    assert (200, 2) == (preview.status_code, preview.json()["count"])
    assert 201 == applied.status_code, applied.text
    assert {"action": "release", "changed": 2, "replayed": 0, "remaining": 0} == applied.json()
    assert {"changed": 0, "replayed": 2} == {k: resent.json()[k] for k in ("changed", "replayed")}
    assert (400, "validation-error") == (no_reason.status_code, _type(no_reason))
    audit = await rows.rows(
        "SELECT dead_letter_id, reason, elevation_id IS NOT NULL FROM events.operator_audit"
        " WHERE idempotency_key LIKE %s ORDER BY dead_letter_id",
        "form-1:%",
    )
    assert sorted((d, "broker fixed", True) for d in dead[1:]) == sorted(audit)
    parked = await app.admin.get(
        EVENTS + "/parked-aggregates", params={"organizationId": str(ORG)}, headers=staff.headers()
    )
    assert [] == parked.json()["items"]
    other = await app.admin.get(
        EVENTS + "/parked-aggregates",
        params={"organizationId": str(OTHER_ORG)},
        headers=staff.headers(),
    )
    assert 1 == len(other.json()["items"])


async def test_a_bulk_republish_puts_each_dead_event_before_its_aggregates_later_ones(
    app: App, rows: EventRows
) -> None:
    staff = await _staff(app, rows)
    dead = [await _parked(rows, ORG, f"order-{n}") for n in range(2)]
    preview = await app.admin.get(
        EVENTS + "/bulk-preview",
        params={
            "action": "republish",
            "aggregateType": "thing",
            "eventType": "demo.thing_happened",
        },
        headers=staff.headers(),
    )

    applied = await _bulk(
        app,
        staff,
        "form-r",
        action="republish",
        aggregateType="thing",
        eventType="demo.thing_happened",
        asOf=preview.json()["asOf"],
        reason="target fixed",
    )

    assert 2 == preview.json()["count"]
    assert 2 == applied.json()["changed"], applied.text
    republished = await rows.rows(
        "SELECT republish_of FROM events.outbox_records WHERE republish_of IS NOT NULL"
    )
    assert sorted(dead) == sorted(r[0] for r in republished)
    # Each aggregate's head is its republished record, ahead of the event that waited.
    claimed = await rows.claim()
    assert {r[0] for r in claimed} == {
        row[0]
        for row in await rows.rows(
            "SELECT id FROM events.outbox_records WHERE republish_of IS NOT NULL"
        )
    }


async def test_a_bulk_cancel_withdraws_pending_events_and_hands_the_aggregate_on(
    app: App, rows: EventRows
) -> None:
    staff = await _staff(app, rows)
    imported = [await rows.append(ORG, f"import-{n}") for n in range(3)]
    later = await rows.append(ORG, "import-0")  # behind the first: flows once it is cancelled
    preview = await app.admin.get(
        EVENTS + "/bulk-preview", params={"action": "cancel"}, headers=staff.headers()
    )

    applied = await _bulk(
        app,
        staff,
        "cancel-1",
        action="cancel",
        asOf=preview.json()["asOf"],
        reason="duplicate import",
        limit=3,
    )

    assert 4 == preview.json()["count"]
    assert {"changed": 3, "remaining": 1} == {
        k: applied.json()[k] for k in ("changed", "remaining")
    }
    states = dict(
        await rows.rows(
            "SELECT domain_event_id, state || ':' || COALESCE(dead_letter_reason, '')"
            " FROM events.outbox_records"
        )
    )
    assert dict.fromkeys(imported, "dead_lettered:CANCELLED") == {e: states[e] for e in imported}
    assert "pending:" == states[later]
    assert [later] == [row[1] for row in await rows.claim()]


async def test_staff_pause_resume_and_replay_a_consumer_with_a_reason_audited(
    app: App, rows: EventRows
) -> None:
    staff = await _staff(app, rows)
    reason = {"reason": "handler bug, fix deploying"}

    listed = await app.admin.get(CONSUMERS + "/", headers=staff.headers())
    paused = await app.admin.post(
        f"{CONSUMERS}/{NOTICES}/pause", json=reason, headers=staff.headers()
    )
    again = await app.admin.post(
        f"{CONSUMERS}/{NOTICES}/pause", json=reason, headers=staff.headers()
    )
    state = await app.admin.get(CONSUMERS + "/", headers=staff.headers())
    resumed = await app.admin.post(
        f"{CONSUMERS}/{NOTICES}/resume", json=reason, headers=staff.headers()
    )
    replayed = await app.admin.post(
        f"{CONSUMERS}/{NOTICES}/replays",
        json={**reason, "fromSequence": 1},
        headers=staff.headers(),
    )
    both = await app.admin.post(
        f"{CONSUMERS}/{NOTICES}/replays",
        json={**reason, "fromSequence": 1, "since": "2026-01-01T00:00:00Z"},
        headers=staff.headers(),
    )
    unknown = await app.admin.post(
        f"{CONSUMERS}/nobody.here/pause", json=reason, headers=staff.headers()
    )
    letters = await app.admin.get(f"{CONSUMERS}/{NOTICES}/dead-letters", headers=staff.headers())

    assert 200 == listed.status_code, listed.text
    assert NOTICES in [c["consumer"] for c in listed.json()["items"]]
    assert {"consumer": NOTICES, "active": False, "changed": True} == paused.json()
    assert not again.json()["changed"]
    [notices] = [c for c in state.json()["items"] if c["consumer"] == NOTICES]
    assert not notices["active"]
    assert resumed.json()["changed"]
    assert 200 == replayed.status_code, replayed.text
    assert (400, "validation-error") == (both.status_code, _type(both))
    assert (400, "validation-error") == (unknown.status_code, _type(unknown))
    assert (200, []) == (letters.status_code, letters.json()["items"])
    audit = await rows.rows(
        "SELECT action, consumer, reason, actor_id IS NOT NULL, elevation_id IS NOT NULL,"
        " deliveries FROM events.consumer_audit ORDER BY id"
    )
    expected_deliveries = replayed.json()["deliveries"]
    assert [
        ("pause", NOTICES, reason["reason"], True, True, None),
        ("resume", NOTICES, reason["reason"], True, True, None),
        ("replay", NOTICES, reason["reason"], True, True, expected_deliveries),
    ] == audit


async def test_the_workers_view_names_each_process_lane_and_its_lag(
    app: App, rows: EventRows
) -> None:
    staff = await _staff(app, rows)
    owner = f"host-1:{uuid.uuid4().hex[:6]}"
    await rows.append(ORG, "order-1")  # the events lane has due work
    async with await rows.connect("outbox_worker") as conn:
        for lane in ("security", "events"):
            await conn.execute(
                "SELECT outbox.worker_heartbeat(%s, %s, now() - interval '1 hour', false)",
                (owner, lane),
            )
        await conn.execute("SELECT outbox.worker_heartbeat('host-0:1', 'events', now(), false)")
    await rows.rows(
        "UPDATE outbox.worker_lanes SET seen_at = now() - interval '5 minutes'"
        " WHERE owner = 'host-0:1'"
    )

    listed = await app.admin.get(WORKERS + "/", headers=staff.headers())

    assert 200 == listed.status_code, listed.text
    items = listed.json()["items"]
    assert [(owner, "events", True), (owner, "security", True), ("host-0:1", "events", False)] == [
        (i["owner"], i["lane"], i["running"]) for i in items
    ]
    assert items[0]["lagSeconds"] is not None
    assert items[0]["lagSeconds"] >= 0
