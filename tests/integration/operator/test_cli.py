"""outboxctl's operator commands against the real database: repairs, staff, exit codes."""

from __future__ import annotations

import json
import uuid

import pytest
from psycopg.conninfo import make_conninfo

from outbox.domain.delivery.failures import FailureClass
from outbox.entrypoints.cli.exit_codes import ExitCode
from tests.integration.identity.api import PASSWORD
from tests.integration.operator.staff_world import STAFF, StaffWorld

pytestmark = pytest.mark.integration

BOB = "bob@example.com"


async def test_a_code_reissued_from_the_cli_confirms(world: StaffWorld):
    await world.staff()
    dead = await world.dead_code(BOB)

    result = await world.cli(
        "dead-letters", "reissue", str(dead.message_id), "--staff", STAFF, "--json"
    )

    assert ExitCode.OK == result.exit_code, result.stderr
    delivery = await world.api.deliver_one()
    assert str(delivery.message_id) == json.loads(result.stdout)["messageId"]
    confirm = await world.api.post(
        "/sign-ups/confirmations",
        {"identifier": BOB, "code": delivery.content.text, "password": PASSWORD},
    )
    assert 204 == confirm.status_code
    assert delivery.content.text not in result.stdout + result.stderr


async def test_a_cli_retry_with_the_same_key_does_nothing_more(world: StaffWorld):
    await world.staff()
    dead = await world.dead_code(BOB)
    args = ("dead-letters", "reissue", str(dead.message_id), "--staff", STAFF)

    first = await world.cli(*args, "--idempotency-key", "ticket-42")
    again = await world.cli(*args, "--idempotency-key", "ticket-42")

    assert (ExitCode.OK, ExitCode.OK) == (first.exit_code, again.exit_code)
    assert again.stdout.startswith("already reissued")
    assert 1 == len(await world.pending())


async def test_a_refused_reissue_exits_refused_and_says_why(world: StaffWorld):
    await world.staff()
    dead = await world.dead_code(BOB)
    await world.cli("dead-letters", "reissue", str(dead.message_id), "--staff", STAFF)

    result = await world.cli("dead-letters", "reissue", str(dead.message_id), "--staff", STAFF)

    assert ExitCode.REFUSED == result.exit_code
    assert "newer_message_exists" in result.stderr
    assert "" == result.stdout


async def test_the_cli_names_the_staff_member_and_the_database_checks_it(world: StaffWorld):
    await world.staff("stranger@example.com", grant=False)
    dead = await world.dead_code(BOB)
    base = ("dead-letters", "reissue", str(dead.message_id), "--staff")

    unknown = await world.cli(*base, "nobody@example.com")
    not_staff = await world.cli(*base, "stranger@example.com")
    malformed = await world.cli(*base, "not-an-email")

    assert ExitCode.NOT_FOUND == unknown.exit_code
    assert ExitCode.REFUSED == not_staff.exit_code
    assert "42501" in not_staff.stderr
    assert ExitCode.USAGE == malformed.exit_code
    assert [] == await world.pending()


async def test_an_unknown_message_exits_not_found(world: StaffWorld):
    result = await world.cli("messages", "show", str(uuid.uuid4()))

    assert ExitCode.NOT_FOUND == result.exit_code
    assert "not found" in result.stderr


async def test_a_dead_notification_is_requeued_from_the_cli(world: StaffWorld, connect_as):
    await world.staff()
    world.api.provider.failures_for["dana@example.com"] = world.api.provider.refuse(
        FailureClass.REJECTED
    )
    async with connect_as("outbox_producer") as conn:
        await conn.execute(
            "SELECT outbox.enqueue_message(gen_random_uuid(), 'notification', 'email',"
            " 'dana@example.com', NULL, 'notification', '{\"body\": \"hello\"}')"
        )
    await world.api.deliver()
    world.api.provider.failures_for.clear()
    [(dead_id,)] = await world.api.rows(
        "SELECT id FROM outbox.messages WHERE state = 'dead_lettered'"
    )

    result = await world.cli("dead-letters", "requeue", str(dead_id), "--staff", STAFF)
    again = await world.cli(
        "dead-letters", "requeue", str(dead_id), "--staff", STAFF, "--idempotency-key", "x"
    )

    assert ExitCode.OK == result.exit_code, result.stderr
    assert ExitCode.REFUSED == again.exit_code
    assert "already_requeued" in again.stderr
    [delivery] = await world.api.deliver()
    assert "dana@example.com" == delivery.destination


async def test_staff_grant_and_revoke_from_the_cli(world: StaffWorld):
    caller = await world.staff(grant=False)

    granted = await world.cli("staff", "grant", STAFF)
    assert 200 == (await world.get("/backlog", caller)).status_code
    revoked = await world.cli("staff", "revoke", STAFF)
    again = await world.cli("staff", "revoke", STAFF)
    unknown = await world.cli("staff", "grant", "nobody@example.com")

    assert (ExitCode.OK, ExitCode.OK, ExitCode.OK) == (
        granted.exit_code,
        revoked.exit_code,
        again.exit_code,
    )
    assert granted.stdout.startswith("granted staff to identity")
    assert again.stdout.startswith("not staff:")
    assert ExitCode.NOT_FOUND == unknown.exit_code
    assert 403 == (await world.get("/backlog", caller)).status_code
    assert [("staff_grant",), ("staff_revoke",)] == await world.api.rows(
        "SELECT action FROM outbox.staff_audit ORDER BY id"
    )


async def test_the_api_login_cannot_read_as_the_database_operator(world: StaffWorld):
    """outboxctl on a login that is only the API role: refused at the database (42501)."""
    world.env["OUTBOX_DATABASE_URL"] = make_conninfo(
        world.api.database_url, options="-c role=identity_service"
    )

    result = await world.cli("backlog")

    assert ExitCode.REFUSED == result.exit_code
    assert "42501" in result.stderr


async def test_a_message_never_published_has_no_delivery_state(world: StaffWorld):
    """Issue 29, finding 6: ``messages show`` said "delivery state: accepted" for dead-lettered
    and pending messages, as if a provider had taken them."""
    dead = await world.dead_code()

    shown = await world.cli_json("messages", "show", str(dead.message_id))
    table = await world.cli("messages", "show", str(dead.message_id))

    assert ("dead_lettered", None) == (shown["state"], shown["deliveryState"])
    assert 0 == table.exit_code, table.stderr
    assert "delivery state: none: never published" in " ".join(table.stdout.split())
    assert "accepted" not in table.stdout
