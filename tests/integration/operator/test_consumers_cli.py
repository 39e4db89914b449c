"""``outboxctl consumers ...`` and ``outboxctl consume``, in-process, on the real database."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from outbox.entrypoints.cli.exit_codes import ExitCode
from tests.consumer_rows import consumer_role, define_type, publish

pytestmark = pytest.mark.integration

ORG = uuid.UUID("00000000-0000-4000-8000-0000000000c2")
CONSUMER = "shop.fulfilment"
# Registered by the migrations (0022, 0028), sorted.
SHIPPED = ["identity.account_notifications", "identity.security_notices"]


def _json(result: Any) -> Any:
    assert ExitCode.OK == result.returncode, result.stderr
    return json.loads(result.stdout)


def _shop(result: Any) -> list[Any]:
    """The listed items of the test's consumer (the shipped one aside)."""
    return [item for item in _json(result)["items"] if item["consumer"] == CONSUMER]


async def _deliver_two(connect_as) -> None:
    async with connect_as() as owner:
        await define_type(owner, "sales.order_placed")
        await owner.execute("INSERT INTO events.modules (code) VALUES ('shop')")
        await owner.execute(f"SELECT events.register_consumer('{CONSUMER}', 'shop', 3)")
        await owner.execute(f"SELECT events.subscribe('{CONSUMER}', 'sales.order_placed', 1, 1)")
        for n in range(2):
            await publish(
                owner, organization_id=ORG, event_type="sales.order_placed", aggregate=("o", str(n))
            )


async def test_list_and_lag_show_the_consumer_and_what_it_is_behind(connect_as, cli):
    assert SHIPPED == [i["consumer"] for i in _json(cli("consumers", "lag", "--json"))["items"]]
    await _deliver_two(connect_as)

    [listed] = _shop(cli("consumers", "list", "--json"))
    table = cli("consumers", "lag")

    assert {
        "consumer": CONSUMER,
        "ownerModule": "shop",
        "active": True,
        "ordered": True,
        "maxAttempts": 3,
        "replayRound": 0,
        "subscriptions": ["sales.order_placed:1-1"],
        "eventsBehind": 2,
        "deadLetters": 0,
    } == {k: v for k, v in listed.items() if k != "oldestUndeliveredAgeSeconds"}
    assert listed["oldestUndeliveredAgeSeconds"] >= 0
    assert CONSUMER in table.stdout


async def test_pause_resume_and_replay(connect_as, cli):
    await _deliver_two(connect_as)

    assert {"consumer": CONSUMER, "active": False, "changed": True} == _json(
        cli("consumers", "pause", CONSUMER, "--json")
    )
    assert "already paused" in cli("consumers", "pause", CONSUMER).stdout
    assert cli("consumers", "resume", CONSUMER).stdout.startswith(f"{CONSUMER} resumed")
    assert {"consumer": CONSUMER, "deliveries": 1} == _json(
        cli("consumers", "replay", CONSUMER, "--from", "2", "--json")
    )
    assert {"consumer": CONSUMER, "deliveries": 2} == _json(
        cli("consumers", "replay", CONSUMER, "--since", "2000-01-01", "--json")
    )
    [row] = _shop(cli("consumers", "lag", "--json"))
    assert (5, 2) == (row["eventsBehind"], row["replayRound"])


async def _dead_letter_all(connect_as, role: str) -> None:
    async with connect_as(role) as conn:
        cursor = await conn.execute(
            f"SELECT delivery_id, lease_token FROM events.claim_consumer_deliveries("
            f"'{CONSUMER}', 't', 10, 60)"
        )
        for delivery_id, token in await cursor.fetchall():
            await conn.execute(
                "SELECT events.record_consumer_processing_attempt(%s, %s, 1, 'dead_letter',"
                " 'Reject', 'bad_order')",
                (delivery_id, token),
            )


async def test_dead_letters_page_and_refusals(connect_as, cli):
    await _deliver_two(connect_as)
    async with connect_as() as owner, consumer_role(owner, "shop") as role:
        await _dead_letter_all(connect_as, role)

    page = _json(cli("consumers", "dead-letters", CONSUMER, "--limit", "1", "--json"))
    [item] = page["items"]
    older = _json(
        cli(
            "consumers",
            "dead-letters",
            CONSUMER,
            "--before",
            page["pageInfo"]["endCursor"],
            "--json",
        )
    )

    assert ("rejected", "bad_order") == (item["reason"], item["code"])
    assert page["pageInfo"]["hasNextPage"]
    assert 1 == len(older["items"])
    unknown = cli("consumers", "pause", "shop.nobody")
    assert ExitCode.USAGE == unknown.returncode
    assert "p_consumer" in unknown.stderr
    both = cli("consumers", "replay", CONSUMER)
    assert ExitCode.USAGE == both.returncode


def test_consume_refuses_a_consumer_without_a_handler(cli):
    result = cli("consume", "--consumer", "shop.nobody", "--drain")

    assert ExitCode.USAGE == result.returncode
    assert "no handler runs shop.nobody" in result.stderr


def test_consume_drains_with_nothing_to_run(cli):
    """The shipped consumer runs (as identity_service, whatever the login) and finds nothing."""
    drained = _json(cli("consume", "--drain"))
    assert SHIPPED == sorted(drained)
    assert [0, 0] == [drained[code]["claimed"] for code in SHIPPED]
