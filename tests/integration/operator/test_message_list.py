"""``outboxctl messages list`` and ``dead-letters list`` through the real CLI and PostgreSQL:
filters, search by id and by destination, pages that hold still while messages arrive, and
what became of each dead letter."""

from __future__ import annotations

import pytest

from outbox.entrypoints.cli.exit_codes import ExitCode
from tests.integration.operator.staff_world import STAFF, StaffWorld

pytestmark = pytest.mark.integration

NOTIFY = (
    "SELECT outbox.enqueue_message(gen_random_uuid(), 'notification', 'email', %s, NULL,"
    " 'notification', '{\"body\": \"hello\"}')"
)


async def _notify(world: StaffWorld, *destinations: str) -> list[str]:
    """Enqueue one notification per destination, oldest first; return their ids."""
    for destination in destinations:
        await world.api.rows(NOTIFY, destination)
    rows = await world.api.rows(
        "SELECT id::text FROM outbox.messages WHERE purpose = 'notification'"
        " ORDER BY created_at, id"
    )
    return [row[0] for row in rows]


async def test_filters_narrow_the_list_and_every_destination_is_masked(world: StaffWorld):
    dead = await world.dead_code("bob@example.com")
    await _notify(world, "dana@example.com")

    everything = await world.cli_json("messages", "list")
    dead_only = await world.cli_json("messages", "list", "--state", "dead_lettered")
    rejected = await world.cli_json("messages", "list", "--reason", "REJECTED")
    notifications = await world.cli_json("messages", "list", "--purpose", "notification")
    by_provider = await world.cli_json(
        "messages", "list", "--provider", world.api.provider.name, "--state", "dead_lettered"
    )
    nothing = await world.cli_json("messages", "list", "--provider", "no-such-provider")

    assert 2 == len(everything["items"])
    assert [str(dead.message_id)] == [i["id"] for i in dead_only["items"]]
    assert dead_only == rejected == by_provider
    assert ["d***@example.com"] == [i["destination"] for i in notifications["items"]]
    assert [] == nothing["items"]
    item = dead_only["items"][0]
    assert ("sign_up", "dead_lettered", "REJECTED", 1, None) == (
        item["purpose"],
        item["state"],
        item["deadLetterReason"],
        item["attemptCount"],
        item["repair"],
    )
    assert "bob@example.com" not in str(everything)


async def test_a_time_range_bounds_the_creation_time(world: StaffWorld):
    [first] = await _notify(world, "dana@example.com")
    [(created,)] = await world.api.rows(
        "SELECT created_at FROM outbox.messages WHERE id = %s::uuid", first
    )
    stamp = created.isoformat()

    since = await world.cli_json("messages", "list", "--since", stamp)
    until = await world.cli_json("messages", "list", "--until", stamp)
    backwards = await world.cli("messages", "list", "--since", stamp, "--until", "2000-01-01")
    malformed = await world.cli("messages", "list", "--since", "yesterday")

    assert [first] == [i["id"] for i in since["items"]]
    assert [] == until["items"]
    assert ExitCode.USAGE == backwards.exit_code
    assert "until: must be later than since" in backwards.stderr
    assert ExitCode.USAGE == malformed.exit_code
    assert "ISO 8601" in malformed.stderr


async def test_a_search_by_id_or_destination_finds_the_message_and_shows_it_masked(
    world: StaffWorld,
):
    ids = await _notify(world, "dana@example.com", "erin@example.com", "dana@example.com")

    by_id = await world.cli_json("messages", "list", "--id", ids[1])
    by_destination = await world.cli_json("messages", "list", "--destination", "dana@example.com")
    by_case = await world.cli_json("messages", "list", "--destination", "dana@EXAMPLE.com")
    table = await world.cli("messages", "list", "--destination", "dana@example.com")
    not_an_address = await world.cli("messages", "list", "--destination", "dana")

    assert [ids[1]] == [i["id"] for i in by_id["items"]]
    assert [ids[2], ids[0]] == [i["id"] for i in by_destination["items"]]
    assert by_destination == by_case  # the one spelling messages are stored in
    assert ["d***@example.com"] * 2 == [i["destination"] for i in by_destination["items"]]
    assert "dana@example.com" not in table.stdout + str(by_destination)
    assert ExitCode.USAGE == not_an_address.exit_code
    assert "destination" in not_an_address.stderr


async def test_pages_hold_still_while_messages_arrive(world: StaffWorld):
    ids = await _notify(world, *(f"p{i}@example.com" for i in range(5)))
    newest_first = ids[::-1]

    first = await world.cli_json("messages", "list", "--limit", "2")
    await _notify(world, "newcomer@example.com")
    second = await world.cli_json(
        "messages", "list", "--limit", "2", "--after", first["pageInfo"]["endCursor"]
    )
    third = await world.cli_json(
        "messages", "list", "--limit", "2", "--after", second["pageInfo"]["endCursor"]
    )
    back = await world.cli_json(
        "messages", "list", "--limit", "2", "--before", second["pageInfo"]["startCursor"]
    )

    assert newest_first == [i["id"] for p in (first, second, third) for i in p["items"]]
    assert {
        "hasNextPage": True,
        "hasPreviousPage": False,
        "startCursor": None,
        "endCursor": newest_first[1],
    } == first["pageInfo"]
    assert (False, True) == (
        third["pageInfo"]["hasNextPage"],
        third["pageInfo"]["hasPreviousPage"],
    )
    assert first["items"] == back["items"]
    assert back["pageInfo"]["hasPreviousPage"]  # the newcomer sits above
    unknown = await world.cli("messages", "list", "--after", "00000000-0000-0000-0000-000000000000")
    assert ExitCode.USAGE == unknown.exit_code
    assert "cursor" in unknown.stderr


async def test_dead_letters_say_whether_they_were_reissued_or_requeued(world: StaffWorld):
    await world.staff()
    code = await world.dead_code("bob@example.com")
    untouched = await world.dead_code("carol@example.com")
    reissue = await world.cli_json(
        "dead-letters", "reissue", str(code.message_id), "--staff", STAFF
    )

    listed = await world.cli_json("dead-letters", "list")
    table = await world.cli("dead-letters", "list")
    searched = await world.cli_json("messages", "list", "--id", str(code.message_id))

    repairs = {i["id"]: i["repair"] for i in listed["items"]}
    assert None is repairs[str(untouched.message_id)]
    repair = repairs[str(code.message_id)]
    assert ("reissue", reissue["messageId"]) == (repair["action"], repair["messageId"])
    assert repair == searched["items"][0]["repair"]
    assert "reissued" in table.stdout
    assert ExitCode.OK == table.exit_code
