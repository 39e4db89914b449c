"""Suppressions and receipts for staff (the admin listener) and for the database operator
(outboxctl), from the outside: gated, audited, masked; and a suppressed sign-up answers as
any other (no enumeration) while its code is never handed to a provider."""

from __future__ import annotations

import pytest

from tests.integration.operator.staff_world import StaffCaller, StaffWorld

pytestmark = pytest.mark.integration

ROOT = "/platform-admin"


def _headers(caller: StaffCaller, elevation: str | None = "") -> dict[str, str]:
    headers = {"Authorization": f"Bearer {caller.token}"}
    token = caller.elevation if elevation == "" else elevation
    if token is not None:
        headers["Elevation-Token"] = token
    return headers


async def test_staff_add_list_and_lift_a_suppression_audited_in_their_name(world: StaffWorld):
    caller = await world.staff()
    body = {"destination": "Gone@Example.com", "reason": "the owner asked"}

    added = await world.staff_client.post(
        f"{ROOT}/suppressions", json=body, headers=_headers(caller)
    )
    listed = await world.staff_client.get(f"{ROOT}/suppressions", headers=_headers(caller))
    lifted = await world.staff_client.post(
        f"{ROOT}/suppressions/lifts", json=body, headers=_headers(caller)
    )
    again = await world.staff_client.post(
        f"{ROOT}/suppressions/lifts", json=body, headers=_headers(caller)
    )

    assert 200 == added.status_code, added.text
    assert {"destination": "g***@example.com", "changed": True}.items() <= added.json().items()
    assert [("g***@example.com", "operator", "the owner asked")] == [
        (i["destination"], i["cause"], i["reason"]) for i in listed.json()["items"]
    ]
    assert (200, 404) == (lifted.status_code, again.status_code)
    audit = await world.api.rows(
        "SELECT action, actor_id, elevation_id IS NOT NULL, reason"
        " FROM outbox.suppression_audit ORDER BY id"
    )
    assert [
        ("add", caller.identity_id, True, "the owner asked"),
        ("lift", caller.identity_id, True, "the owner asked"),
    ] == audit
    assert "Gone@Example.com" not in added.text + listed.text


@pytest.mark.parametrize("elevation", [None, "not-a-token"], ids=["missing", "unknown"])
async def test_suppression_routes_need_a_fresh_step_up(world: StaffWorld, elevation):
    caller = await world.staff()
    body = {"destination": "gone@example.com", "reason": "x"}
    answers = [
        await world.staff_client.get(f"{ROOT}/suppressions", headers=_headers(caller, elevation)),
        await world.staff_client.post(
            f"{ROOT}/suppressions", json=body, headers=_headers(caller, elevation)
        ),
        await world.staff_client.post(
            f"{ROOT}/suppressions/lifts", json=body, headers=_headers(caller, elevation)
        ),
    ]
    assert [403, 403, 403] == [a.status_code for a in answers]
    assert [(0,)] == await world.api.rows("SELECT count(*) FROM outbox.suppressions")


async def test_someone_who_is_not_staff_cannot_suppress(world: StaffWorld):
    stranger = await world.staff("stranger@example.com", grant=False)
    answer = await world.staff_client.post(
        f"{ROOT}/suppressions",
        json={"destination": "gone@example.com", "reason": "x"},
        headers=_headers(stranger),
    )
    assert 403 == answer.status_code
    assert "staff-required" in answer.json()["type"]


async def test_a_suppression_without_a_reason_is_refused(world: StaffWorld):
    caller = await world.staff()
    answer = await world.staff_client.post(
        f"{ROOT}/suppressions",
        json={"destination": "gone@example.com", "reason": "   "},
        headers=_headers(caller),
    )
    assert 400 == answer.status_code


async def test_a_suppressed_sign_up_answers_as_any_other_and_is_never_sent(world: StaffWorld):
    await world.cli("suppressions", "add", "gone@example.com", "--reason", "hard bounce")

    suppressed = await world.api.post("/sign-ups", {"identifier": "gone@example.com"})
    other = await world.api.post("/sign-ups", {"identifier": "here@example.com"})
    sent = await world.api.deliver()

    assert suppressed.status_code == other.status_code
    assert suppressed.json().keys() == other.json().keys()
    assert suppressed.headers.keys() == other.headers.keys()
    assert ["here@example.com"] == [delivery.destination for delivery in sent]
    assert [("dead_lettered", "suppressed")] == await world.api.rows(
        "SELECT state, dead_letter_reason FROM outbox.messages WHERE destination = %s",
        "gone@example.com",
    )


async def test_the_database_operator_lists_adds_and_lifts_with_outboxctl(world: StaffWorld):
    added = await world.cli_json("suppressions", "add", "+34612345678", "--reason", "complaint")
    listed = await world.cli_json("suppressions", "list")
    lifted = await world.cli_json("suppressions", "lift", "+34612345678", "--reason", "ok")
    missing = await world.cli("suppressions", "lift", "+34612345678", "--reason", "ok")
    no_reason = await world.cli("suppressions", "add", "+34612345678")

    assert {"destination": "+34***78", "changed": True}.items() <= added.items()
    assert [("+34***78", "sms", "operator", "complaint")] == [
        (i["destination"], i["channel"], i["cause"], i["reason"]) for i in listed["items"]
    ]
    assert lifted["id"] == added["id"]
    assert 5 == missing.exit_code
    assert 0 != no_reason.exit_code
    assert {"items": []} == await world.cli_json("suppressions", "list")
