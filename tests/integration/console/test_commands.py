"""The console's searches and commands through the real app: destination search by digest,
keyset pages stable under inserts, and a bulk repair that a retried form never repeats."""

from __future__ import annotations

import re
from uuid import UUID

import pytest

from outbox.application.delivery.message_filters import destination_digest
from outbox.domain.delivery.failures import FailureClass
from tests.events_rows import EventRows
from tests.integration.console.world import ConsoleWorld, csrf_of, form_key_of

pytestmark = pytest.mark.integration

STAFF = "staff@example.com"
NOTIFY = (
    "SELECT outbox.enqueue_message(gen_random_uuid(), 'notification', 'email', %s, NULL,"
    ' \'notification\', \'{"subject": "s", "body": "hello"}\')'
)
ROW = re.compile(r'<a href="/console/messages/([0-9a-f-]{36})"><code>')


async def _notify(world: ConsoleWorld, *destinations: str) -> None:
    for destination in destinations:
        await world.staff.api.rows(NOTIFY, destination)


async def _dead_notifications(world: ConsoleWorld, *destinations: str) -> None:
    provider = world.staff.api.provider
    for destination in destinations:
        provider.failures_for[destination] = provider.refuse(FailureClass.REJECTED)
    await _notify(world, *destinations)
    await world.staff.api.deliver()
    provider.failures_for.clear()


async def test_a_destination_is_searched_by_its_digest_and_never_shown(world: ConsoleWorld):
    await world.account(STAFF)
    async with world.client() as client:
        csrf = await world.stepped_up(client, STAFF)
        await _notify(world, "zoe@example.com", "yan@example.com")
        response = await client.post(
            "/console/messages/search", data={"csrf": csrf, "destination": " Zoe@Example.com "}
        )
        assert 303 == response.status_code
        location = response.headers["location"]
        assert f"dest={destination_digest('zoe@example.com')}" in location
        assert "zoe" not in location.lower()
        page = await client.get(location)
    assert 1 == len(ROW.findall(page.text))
    assert "z***@example.com" in page.text
    assert "zoe@example.com" not in page.text.lower()


async def test_keyset_pages_neither_repeat_nor_skip_rows_enqueued_meanwhile(world: ConsoleWorld):
    await world.account(STAFF)
    async with world.client() as client:
        await world.stepped_up(client, STAFF)
        await _notify(world, *(f"n{i}@example.com" for i in range(60)))
        first = await client.get("/console/messages?purpose=notification")
        ids = ROW.findall(first.text)
        assert 50 == len(ids)
        older = re.search(r'href="/console/messages\?([^"]*after=[0-9a-f-]{36})"', first.text)
        assert older is not None
        await _notify(world, *(f"late{i}@example.com" for i in range(5)))
        second = await client.get("/console/messages?" + older.group(1).replace("&amp;", "&"))
    rest = ROW.findall(second.text)
    assert 10 == len(rest)
    assert 60 == len(set(ids) | set(rest))


async def test_a_bulk_requeue_repairs_each_match_once_even_when_the_form_is_sent_again(
    world: ConsoleWorld,
):
    await world.account(STAFF)
    async with world.client() as client:
        await world.stepped_up(client, STAFF)
        await _dead_notifications(world, "a@example.com", "b@example.com", "c@example.com")
        filters = {"state": "dead_lettered", "purpose": "notification"}
        preview = await client.get(
            "/console/messages/bulk", params={**filters, "action": "requeue"}
        )
        assert "<strong>3</strong> dead letters will be requeued" in preview.text
        as_of = re.search(r'name="as_of" value="([^"]+)"', preview.text)
        assert as_of is not None
        await _dead_notifications(world, "d@example.com")  # after the preview: not counted
        form = {
            "csrf": csrf_of(preview.text),
            "idempotency_key": form_key_of(preview.text),
            "as_of": as_of.group(1),
            "action": "requeue",
            "reason": "ticket OPS-9",
            **filters,
        }
        first = await client.post("/console/messages/bulk", data=form)
        again = await client.post("/console/messages/bulk", data=form)
        missing = await client.post("/console/messages/bulk", data={**form, "reason": ""})
    assert "<strong>3</strong> repaired now · 0 already done" in first.text
    assert "<strong>0</strong> repaired now · 3 already done" in again.text
    assert 400 == missing.status_code
    rows = await world.staff.api.rows(
        "SELECT message_id, console_reason FROM outbox.staff_audit WHERE action = 'requeue'"
    )
    assert 3 == len(rows)
    assert {"ticket OPS-9"} == {reason for _, reason in rows}
    [(late,)] = await world.staff.api.rows(
        "SELECT id FROM outbox.messages WHERE destination = 'd@example.com'"
    )
    assert isinstance(late, UUID)
    assert late not in {message_id for message_id, _ in rows}


async def test_staff_see_a_parked_aggregate_open_its_event_and_release_it(
    world: ConsoleWorld, database_url: str
):
    events = EventRows(database_url)
    await events.setup()
    organization = UUID("00000000-0000-4000-8000-0000000000e1")
    dead = await events.append(organization, "order-1")
    await events.append(organization, "order-1")
    await events.dead_letter(dead)
    record = await events.dead_record(dead)
    await world.account(STAFF)
    async with world.client() as client:
        await world.stepped_up(client, STAFF)
        listing = await client.get(f"/console/events?organization={organization}")
        detail = await client.get(f"/console/events/{dead}")
        overview = await client.get("/console/")
        form = {
            "csrf": csrf_of(detail.text),
            "idempotency_key": form_key_of(detail.text),
            "event": str(dead),
            "action": "release",
            "reason": "ticket OPS-7",
        }
        released = await client.post(f"/console/events/dead-letters/{record}/repairs", data=form)
        again = await client.post(f"/console/events/dead-letters/{record}/repairs", data=form)
        after = await client.get(released.headers["location"])
    assert (200, 200, 200) == (listing.status_code, detail.status_code, overview.status_code)
    assert "order-1" in listing.text
    assert "parks its aggregate" in listing.text
    assert "Repair the dead letter" in detail.text
    assert f"/console/events?organization={organization}" in overview.text
    assert 303 == released.status_code
    assert again.headers["location"].endswith("done=replayed")
    assert "Released:" in after.text
    assert "ticket OPS-7" in after.text
    assert "Repair the dead letter" not in after.text


async def test_bulk_repairs_offer_and_count_only_what_they_change(world: ConsoleWorld):
    """Issue 29, finding 6: on dead sign-up codes the first button was "Requeue every match"
    (all refused), the preview counted dead letters already reissued, and "Reissue" reissued
    them again."""
    await world.account(STAFF)
    dead = [await world.staff.dead_code(f"p{i}@example.com") for i in range(3)]
    async with world.client() as client:
        csrf = await world.stepped_up(client, STAFF)
        listed = await client.get("/console/messages?state=dead_lettered&purpose=sign_up")
        one = await client.post(
            f"/console/messages/{dead[0].message_id}/repairs",
            data={
                "csrf": csrf,
                "action": "reissue",
                "idempotency_key": "single-1",
                "reason": "ticket OPS-10",
            },
        )
        filters = {"state": "dead_lettered", "purpose": "sign_up"}
        preview = await client.get(
            "/console/messages/bulk", params={**filters, "action": "reissue"}
        )
        requeue = await client.get(
            "/console/messages/bulk", params={**filters, "action": "requeue"}
        )
        as_of = re.search(r'name="as_of" value="([^"]+)"', preview.text)
        previewed = re.search(r'name="previewed_at" value="([^"]+)"', preview.text)
        assert as_of is not None
        assert previewed is not None
        done = await client.post(
            "/console/messages/bulk",
            data={
                "csrf": csrf_of(preview.text),
                "idempotency_key": form_key_of(preview.text),
                "as_of": as_of.group(1),
                "previewed_at": previewed.group(1),
                "action": "reissue",
                "reason": "ticket OPS-11",
                **filters,
            },
        )

    assert 'value="reissue">Reissue every match' in listed.text
    assert 'value="requeue"' not in listed.text
    assert 303 == one.status_code, one.text
    assert "<strong>2</strong> dead letters will be reissued" in preview.text
    assert "1 other match is left alone" in preview.text
    assert "None of the 3 matching dead letters can be requeued" in requeue.text
    assert "<strong>2</strong> repaired now · 0 already done" in done.text
    reissued = await world.staff.api.rows(
        "SELECT message_id FROM outbox.staff_audit WHERE action = 'reissue'"
    )
    assert sorted(str(d.message_id) for d in dead) == sorted(str(m) for (m,) in reissued)
