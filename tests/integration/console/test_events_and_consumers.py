"""The console's tenant events, consumers and workers through the real app: search events by
filter, preview and apply a bulk release or cancel (a resent form repeats nothing), pause,
resume and replay a consumer with a reason, and the workers view."""

from __future__ import annotations

import re
from uuid import UUID

import pytest

from tests.events_rows import EventRows
from tests.integration.console.world import ConsoleWorld, csrf_of, form_key_of

pytestmark = pytest.mark.integration

STAFF = "staff@example.com"
ORG = UUID("00000000-0000-4000-8000-0000000000a9")
EVENT_ROW = re.compile(r'<a href="/console/events/([0-9a-f-]{36})"><code>')
AS_OF = re.compile(r'name="as_of" value="([^"]+)"')
NOTICES = "identity.security_notices"


async def _rows(world: ConsoleWorld) -> EventRows:
    rows = EventRows(world.staff.api.database_url)
    await rows.setup()
    return rows


async def test_staff_search_events_and_release_every_parked_one_once(world: ConsoleWorld):
    await world.account(STAFF)
    rows = await _rows(world)
    dead = []
    for n in range(3):
        event = await rows.append(ORG, f"order-{n}")
        await rows.dead_letter(event)
        dead.append(event)
    waiting = await rows.append(ORG, "order-1")
    async with world.client() as client:
        await world.stepped_up(client, STAFF)
        found = await client.get(
            "/console/events", params={"state": "dead_lettered", "organization": str(ORG)}
        )
        bad = await client.get("/console/events", params={"since": "yesterday"})
        preview = await client.get(
            "/console/events/bulk", params={"action": "release", "organization": str(ORG)}
        )
        form = {
            "csrf": csrf_of(preview.text),
            "idempotency_key": form_key_of(preview.text),
            "as_of": AS_OF.findall(preview.text)[0],
            "action": "release",
            "organization": str(ORG),
            "reason": "INC-12 fixed",
        }
        applied = await client.post("/console/events/bulk", data=form)
        again = await client.post("/console/events/bulk", data=form)
        pending = await client.get("/console/events", params={"state": "pending"})

    assert 200 == found.status_code, found.text
    assert set(map(str, dead)) == set(EVENT_ROW.findall(found.text))
    assert 400 == bad.status_code
    assert "since" in bad.text
    assert "<strong>3</strong> unresolved dead letters will be released" in preview.text
    assert "<strong>3</strong> unresolved dead letters released now" in applied.text
    assert "<strong>0</strong> unresolved dead letters released now · 3 already done" in (
        again.text
    )
    assert str(waiting) in EVENT_ROW.findall(pending.text)
    [(count,)] = await rows.rows(
        "SELECT count(*) FROM events.operator_audit WHERE reason = 'INC-12 fixed'"
    )
    assert 3 == count


async def test_staff_cancel_pending_events_over_a_filter(world: ConsoleWorld):
    await world.account(STAFF)
    rows = await _rows(world)
    async with world.client() as client:
        await world.stepped_up(client, STAFF)  # the world's worker delivers the code (and events)
        doomed = [await rows.append(ORG, "import-7") for _ in range(2)]
        kept = await rows.append(ORG, "import-8")
        preview = await client.get(
            "/console/events/bulk", params={"action": "cancel", "aggregate": "import-7"}
        )
        applied = await client.post(
            "/console/events/bulk",
            data={
                "csrf": csrf_of(preview.text),
                "idempotency_key": form_key_of(preview.text),
                "as_of": AS_OF.findall(preview.text)[0],
                "action": "cancel",
                "aggregate": "import-7",
                "reason": "duplicate import",
            },
        )

    assert "<strong>2</strong> pending events will be cancelled" in preview.text
    assert "<strong>2</strong> pending events cancelled now" in applied.text
    states = dict(await rows.rows("SELECT domain_event_id, state FROM events.outbox_records"))
    assert ["dead_lettered", "dead_lettered", "pending"] == [states[e] for e in [*doomed, kept]]


async def test_staff_pause_resume_and_replay_a_consumer(world: ConsoleWorld):
    await world.account(STAFF)
    rows = await _rows(world)
    async with world.client() as client:
        csrf = await world.stepped_up(client, STAFF)
        listed = await client.get("/console/consumers")
        paused = await client.post(
            f"/console/consumers/{NOTICES}/pause", data={"csrf": csrf, "reason": "bug"}
        )
        page = await client.get(paused.headers["location"])
        no_reason = await client.post(
            f"/console/consumers/{NOTICES}/resume", data={"csrf": csrf, "reason": ""}
        )
        resumed = await client.post(
            f"/console/consumers/{NOTICES}/resume", data={"csrf": csrf, "reason": "fixed"}
        )
        replayed = await client.post(
            f"/console/consumers/{NOTICES}/replay",
            data={"csrf": csrf, "reason": "fixed", "from_sequence": "1"},
        )
        replay_page = await client.get(replayed.headers["location"])
        unknown = await client.get("/console/consumers/nobody.here")

    assert NOTICES in listed.text
    assert 303 == paused.status_code
    assert "Paused: it claims nothing" in page.text
    assert ">Resume</button>" in page.text
    assert 400 == no_reason.status_code
    assert "resumed" in resumed.headers["location"]
    assert "Replayed:" in replay_page.text
    assert 404 == unknown.status_code
    audit = await rows.rows("SELECT action, reason FROM events.consumer_audit ORDER BY id")
    assert [("pause", "bug"), ("resume", "fixed"), ("replay", "fixed")] == audit


async def test_the_workers_page_shows_each_lane(world: ConsoleWorld):
    await world.account(STAFF)
    rows = await _rows(world)
    async with await rows.connect("outbox_worker") as conn:
        await conn.execute("SELECT outbox.worker_heartbeat('host-w:7', 'events', now(), false)")
    async with world.client() as client:
        await world.stepped_up(client, STAFF)
        page = await client.get("/console/workers")

    assert 200 == page.status_code
    assert "host-w:7" in page.text
    assert "running" in page.text
