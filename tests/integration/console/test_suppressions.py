"""The console's receipts and suppressions through the real app: a message
page shows its receipts and delivery state, a bounce's suppression is listed masked and
lifted with a reason, audited with who acted; a refused form changes nothing."""

from __future__ import annotations

from uuid import UUID

import pytest

from tests.integration.console.world import ConsoleWorld, csrf_of

pytestmark = pytest.mark.integration

STAFF = "staff@example.com"
ANN = "ann@example.com"
RAW_SECRET = "raw-body-secret-7f3a"
NOTIFY = (
    "SELECT outbox.enqueue_message(gen_random_uuid(), 'notification', 'email', %s, NULL,"
    ' \'notification\', \'{"subject": "s", "body": "hello"}\')'
)
RECORD = "SELECT delivery_state FROM outbox.record_receipt(%s, %s, %s, %s, %s, now(), %s::jsonb)"


async def _published(world: ConsoleWorld, destination: str) -> tuple[UUID, str, str]:
    """A notification to ``destination``, sent through "SES" (receipts name a provider we
    know): its id, provider and provider message id."""
    world.staff.api.provider.provider_name = "ses"
    await world.staff.api.rows(NOTIFY, destination)
    await world.staff.api.deliver()
    [row] = await world.staff.api.rows(
        "SELECT a.message_id, a.provider, a.provider_message_id FROM outbox.attempts AS a"
        " JOIN outbox.messages AS m ON m.id = a.message_id"
        " WHERE a.outcome = 'published' AND m.destination = %s",
        destination,
    )
    return row[0], row[1], row[2]


async def _receipt(
    world: ConsoleWorld, provider: str, provider_id: str, event: str, detail: str
) -> str:
    [(state,)] = await world.staff.api.rows(
        RECORD,
        provider,
        f"{provider_id}-{event}",
        provider_id,
        event,
        detail,
        f'{{"token": "{RAW_SECRET}"}}',
    )
    return str(state)


async def test_a_message_page_shows_its_receipts_and_delivery_state(world: ConsoleWorld):
    await world.account(STAFF)
    message_id, provider, provider_id = await _published(world, ANN)
    async with world.client() as client:
        await world.stepped_up(client, STAFF)
        before = (await client.get(f"/console/messages/{message_id}")).text
        assert "accepted" in before
        assert "has said nothing more" in before
        assert "delivered" == await _receipt(world, provider, provider_id, "delivered", "")
        assert "bounced" == await _receipt(world, provider, provider_id, "bounced", "Permanent")
        page = await client.get(f"/console/messages/{message_id}")
        overview = await client.get("/console/")
    counts = overview.text.split('<dl class="counts delivery">')[1].split("</dl>")[0]
    assert "<dt>Bounced</dt><dd>1</dd>" in counts
    assert "<dt>Delivered</dt><dd>0</dd>" in counts
    assert 200 == page.status_code
    assert '<span class="state delivery bounced">bounced</span></dd>' in page.text
    receipts = page.text.split("<h2>Receipts</h2>")[1].split("</section>")[0]
    assert 2 == receipts.count("<tr><td>")
    assert "Permanent" in receipts
    assert provider in receipts
    assert '<span class="state delivery delivered">delivered</span>' in receipts
    assert ANN not in page.text
    assert RAW_SECRET not in page.text


async def test_a_bounced_destination_is_listed_masked_and_lifted_with_a_reason(
    world: ConsoleWorld,
):
    await world.account(STAFF)
    _, provider, provider_id = await _published(world, ANN)
    await _receipt(world, provider, provider_id, "bounced", "Permanent")
    async with world.client() as client:
        csrf = await world.stepped_up(client, STAFF)
        listed = await client.get("/console/suppressions")
        assert 200 == listed.status_code
        assert "a***@example.com" in listed.text
        assert "hard bounce" in listed.text
        assert ANN not in listed.text
        assert "Suppressions</a>" in listed.text  # the navigation link

        no_reason = await client.post(
            "/console/suppressions/lift", data={"csrf": csrf, "destination": ANN, "reason": " "}
        )
        assert 400 == no_reason.status_code
        assert "reason: required" in no_reason.text
        assert [(None,)] == await world.staff.api.rows("SELECT lifted_at FROM outbox.suppressions")

        lifted = await client.post(
            "/console/suppressions/lift",
            data={
                "csrf": csrf_of(listed.text),
                "destination": " Ann@Example.com ",
                "reason": "T-9",
            },
        )
        assert (303, "/console/suppressions?done=lifted") == (
            lifted.status_code,
            lifted.headers["location"],
        )
        again = await client.post(
            "/console/suppressions/lift", data={"csrf": csrf, "destination": ANN, "reason": "T-9"}
        )
        assert "/console/suppressions?done=none" == again.headers["location"]
        active = await client.get("/console/suppressions")
        every = await client.get("/console/suppressions?lifted=1")
    assert "a***@example.com" not in active.text
    assert "a***@example.com" in every.text
    assert ANN not in every.text
    [(staff_id,)] = await world.staff.api.rows(
        "SELECT identity_id FROM identity.login_identifiers WHERE value = %s", STAFF
    )
    audit = await world.staff.api.rows(
        "SELECT action, actor_id, elevation_id IS NOT NULL, reason"
        " FROM outbox.suppression_audit ORDER BY id"
    )
    assert [
        ("add", None, False, f"{provider} receipt bounced: Permanent"),
        ("lift", staff_id, True, "T-9"),
    ] == audit


async def test_a_destination_is_suppressed_by_hand_once(world: ConsoleWorld):
    await world.account(STAFF)
    async with world.client() as client:
        csrf = await world.stepped_up(client, STAFF)
        form = {"csrf": csrf, "destination": "+14155550100", "reason": "asked us to stop"}
        first = await client.post("/console/suppressions/add", data=form)
        second = await client.post("/console/suppressions/add", data=form)
        bad = await client.post(
            "/console/suppressions/add", data={**form, "destination": "not a destination"}
        )
        listed = await client.get("/console/suppressions")
    assert "/console/suppressions?done=added" == first.headers["location"]
    assert "/console/suppressions?done=already" == second.headers["location"]
    assert 400 == bad.status_code
    assert "+14155550100" not in listed.text
    assert "operator" in listed.text
    assert "asked us to stop" in listed.text
    assert [("add",)] == await world.staff.api.rows("SELECT action FROM outbox.suppression_audit")
