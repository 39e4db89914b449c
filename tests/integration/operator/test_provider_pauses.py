"""Provider pauses in an incident (issue 29, finding 4).

Staff step-up codes are outbox messages: with the email provider paused, no code arrives, and
nothing but SQL without an audit row could resume it. Now the database operator lists,
pauses and resumes providers from ``outboxctl providers`` (audited in a staff member's name),
staff do the same through the admin listener's routes, and a name no provider has is refused
instead of answered "Paused".
"""

from __future__ import annotations

import pytest

from outbox.entrypoints.cli.exit_codes import ExitCode
from tests.integration.operator.staff_world import STAFF, StaffWorld

pytestmark = pytest.mark.integration

AUDIT = (
    "SELECT action, provider, elevation_id IS NULL, reason FROM outbox.provider_pause_audit"
    " ORDER BY id"
)


async def test_the_operator_resumes_a_paused_email_provider_without_any_code(world: StaffWorld):
    caller = await world.staff()
    paused = await world.staff_client.post(
        "/platform-admin/providers/smtp/pause",
        json={"reason": "ticket 7: bounces"},
        headers=caller.headers(),
    )
    # The console's own sign-in would now need a code that cannot arrive: break glass.
    listed = await world.cli_json("providers", "list")
    shown = await world.cli("providers", "list")  # 80 columns: the id must stay whole
    resumed = await world.cli(
        "providers", "resume", "smtp", "--staff", STAFF, "--reason", "ticket 7: fixed"
    )
    again = await world.cli_json(
        "providers", "resume", "smtp", "--staff", STAFF, "--reason", "ticket 7: twice"
    )

    assert 200 == paused.status_code, paused.text
    assert {"provider": "smtp", "paused": True, "changed": True} == paused.json()
    assert ["smtp"] == [item["provider"] for item in listed["items"]]
    assert str(caller.identity_id) in shown.stdout
    assert "ticket 7: bounces" == listed["items"][0]["reason"]
    assert (0, "resumed smtp\n") == (resumed.exit_code, resumed.stdout)
    assert {"provider": "smtp", "paused": False, "changed": False} == again
    assert [
        ("pause", "smtp", False, "ticket 7: bounces"),
        ("resume", "smtp", True, "ticket 7: fixed"),
    ] == await world.api.rows(AUDIT)


async def test_a_name_no_provider_has_is_refused_not_paused(world: StaffWorld):
    caller = await world.staff()
    by_route = await world.staff_client.post(
        "/platform-admin/providers/sess/pause", json={"reason": "typo"}, headers=caller.headers()
    )
    by_cli = await world.cli("providers", "pause", "sess", "--staff", STAFF, "--reason", "typo")

    assert 400 == by_route.status_code
    assert "no provider 'sess'" in by_route.text
    assert ExitCode.USAGE == by_cli.exit_code
    assert "no provider 'sess': expected one of" in by_cli.stderr
    assert [] == await world.api.rows("SELECT provider FROM outbox.provider_pauses")


async def test_the_staff_routes_need_a_step_up_and_the_cli_a_staff_member(world: StaffWorld):
    caller = await world.staff()
    unelevated = await world.staff_client.post(
        "/platform-admin/providers/ses/pause",
        json={"reason": "no step-up"},
        headers={"Authorization": f"Bearer {caller.token}"},
    )
    stranger = await world.cli(
        "providers", "pause", "ses", "--staff", "nobody@example.com", "--reason", "who?"
    )

    assert 403 == unelevated.status_code
    assert ExitCode.NOT_FOUND == stranger.exit_code
    assert [] == await world.api.rows("SELECT provider FROM outbox.provider_pauses")
