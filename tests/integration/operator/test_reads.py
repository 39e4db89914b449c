"""Backlog and dead letters through the staff routes and outboxctl: one answer."""

from __future__ import annotations

import json

import pytest

from outbox.adapters.postgres.console_store import PostgresConsoleStore
from outbox.adapters.postgres.message_log import PostgresMessageLog
from outbox.adapters.postgres.operator_store import PostgresBacklogGauge, PostgresOperatorStore
from outbox.adapters.postgres.pool import open_pool
from outbox.adapters.postgres.receipt_store import PostgresSuppressionStore
from outbox.adapters.system.ids import Uuid7Ids
from outbox.application.delivery.operations import MessageOperations
from outbox.entrypoints.observability import build_telemetry, new_registry, render_metrics
from tests.integration.operator.staff_world import StaffWorld

pytestmark = pytest.mark.integration


def _without_repairs(page: dict) -> dict:
    """A page without what only the database operator sees (each dead letter's repair: the
    staff route answers it null)."""
    return {**page, "items": [{k: v for k, v in i.items() if k != "repair"} for i in page["items"]]}


async def test_the_backlog_is_the_same_through_http_and_the_cli(world: StaffWorld):
    caller = await world.staff()
    await world.dead_code()
    await world.api.post("/sign-ups", {"identifier": "carol@example.com"})

    response = await world.get("/backlog", caller)
    cli = await world.cli_json("backlog")

    assert 200 == response.status_code
    body = response.json()
    # Published: the staff member's sign-up code and step-up code, and the notice that their
    # account was verified (sent by the identity.security_notices consumer).
    assert {"pending": 1, "leased": 0, "published": 3, "deadLettered": 1} == body["messages"]
    assert body["oldestDueAgeSeconds"] >= 0
    del body["oldestDueAgeSeconds"], cli["oldestDueAgeSeconds"]  # read a moment apart
    assert body == cli


async def test_dead_letters_are_the_same_through_http_and_the_cli_and_masked(
    world: StaffWorld,
):
    caller = await world.staff()
    dead = [await world.dead_code(f"person{i}@example.com") for i in range(3)]

    first = (await world.get("/dead-letters", caller, limit=2)).json()
    second = (
        await world.get("/dead-letters", caller, limit=2, after=first["pageInfo"]["endCursor"])
    ).json()
    cli_first = await world.cli_json("dead-letters", "list", "--limit", "2")
    cli_second = await world.cli_json(
        "dead-letters", "list", "--limit", "2", "--after", first["pageInfo"]["endCursor"]
    )

    assert [str(d.message_id) for d in reversed(dead)] == [
        item["id"] for item in first["items"] + second["items"]
    ]
    assert [None] * 3 == [item["repair"] for item in first["items"] + second["items"]]
    assert _without_repairs(first) == _without_repairs(cli_first)
    assert _without_repairs(second) == _without_repairs(cli_second)
    assert ["p***@example.com"] * 3 == [i["destination"] for i in first["items"] + second["items"]]
    assert {
        "hasNextPage": True,
        "hasPreviousPage": False,
        "startCursor": None,
        "endCursor": first["items"][-1]["id"],
    } == first["pageInfo"]
    assert (False, True) == (
        second["pageInfo"]["hasNextPage"],
        second["pageInfo"]["hasPreviousPage"],
    )
    assert "person" not in (await world.cli("dead-letters", "list")).stdout


async def test_no_dead_letters_is_an_empty_page_and_an_empty_json_list(world: StaffWorld):
    caller = await world.staff()

    response = await world.get("/dead-letters", caller)

    assert [] == response.json()["items"]
    result = await world.cli("dead-letters", "list", "--json")
    assert 0 == result.exit_code
    assert response.json() == json.loads(result.stdout)
    table = await world.cli("dead-letters", "list")
    assert (0, "no dead letters\n") == (table.exit_code, table.stdout)


async def test_pages_stay_stable_while_new_dead_letters_arrive(world: StaffWorld):
    caller = await world.staff()
    older = [await world.dead_code(f"old{i}@example.com") for i in range(4)]

    first = (await world.get("/dead-letters", caller, limit=2)).json()
    await world.dead_code("new@example.com")
    second = (
        await world.get("/dead-letters", caller, limit=2, after=first["pageInfo"]["endCursor"])
    ).json()
    back = (
        await world.get("/dead-letters", caller, limit=2, before=second["pageInfo"]["startCursor"])
    ).json()

    newest_first = [str(d.message_id) for d in reversed(older)]
    assert newest_first[2:] == [item["id"] for item in second["items"]]
    assert first["items"] == back["items"]
    assert back["pageInfo"]["hasPreviousPage"]  # the newcomer sits above


async def test_a_bad_page_request_is_a_validation_problem(world: StaffWorld):
    caller = await world.staff()
    letter = await world.dead_code()

    for params in (
        {"limit": 0},
        {"limit": 501},
        {"after": "not-a-uuid"},
        {"after": str(letter.message_id), "before": str(letter.message_id)},
        {"after": str(letter.challenge_id)},  # not a dead letter
    ):
        response = await world.get("/dead-letters", caller, **params)
        assert 400 == response.status_code, params
        assert "urn:outbox:problem:validation-error" == response.json()["type"]


async def test_a_message_shows_masked_with_its_attempts_in_the_cli(world: StaffWorld):
    letter = await world.dead_code()

    shown = await world.cli_json("messages", "show", str(letter.message_id))

    assert ("b***@example.com", "dead_lettered", "REJECTED", False) == (
        shown["destination"],
        shown["state"],
        shown["deadLetterReason"],
        shown["hasSecret"],
    )
    assert [(1, "dead_letter", "REJECTED", "550")] == [
        (a["attempt"], a["outcome"], a["failureClass"], a["code"]) for a in shown["attempts"]
    ]
    table = await world.cli("messages", "show", str(letter.message_id))
    assert "bob@example.com" not in table.stdout
    assert "b***@example.com" in table.stdout


async def test_observing_the_backlog_sets_the_prometheus_gauges(world: StaffWorld):
    """What the lead wires before each /metrics scrape: the API role, no identity."""
    await world.dead_code()
    registry = new_registry(process_metrics=False)
    pool = await open_pool(world.api.database_url, min_size=1, role="identity_service")
    try:
        operations = MessageOperations(
            store=PostgresOperatorStore(pool),
            log=PostgresMessageLog(pool),
            search=PostgresConsoleStore(pool),
            suppressions=PostgresSuppressionStore(pool),
            gauge=PostgresBacklogGauge(pool),
            ids=Uuid7Ids(),
            telemetry=build_telemetry(registry),
        )
        await operations.observe_backlog()
    finally:
        await pool.close()

    text = render_metrics(registry)[0].decode()
    assert 'outbox_messages{state="dead_lettered"} 1.0' in text
    assert 'outbox_messages{state="pending"} 0.0' in text
    assert "outbox_oldest_due_age_seconds 0.0" in text
