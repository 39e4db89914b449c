"""``outboxctl events ...`` run in-process, against the real database: the
backlog drains, a dead letter parks its aggregate, release and republish resume it."""

from __future__ import annotations

import functools
import json
import uuid
from typing import Any
from uuid import UUID

import pytest

from outbox.entrypoints.cli.exit_codes import ExitCode
from tests.events_rows import EventRows

pytestmark = pytest.mark.integration

ORG = UUID("00000000-0000-4000-8000-0000000000c1")
STAFF = "staff@example.com"


@pytest.fixture
def cli(cli):  # type: ignore[no-untyped-def]
    """The conftest's ``outboxctl``, under ``outboxctl events``."""
    return functools.partial(cli, "events")


def _json(result: Any) -> Any:
    assert ExitCode.OK == result.returncode, result.stderr
    return json.loads(result.stdout)


async def test_the_backlog_shows_each_organization_and_drains(rows: EventRows, cli):
    other = uuid.uuid4()
    first = await rows.append(ORG, "o-1")
    await rows.append(ORG, "o-2")
    await rows.append(other, "x-1")

    before = _json(cli("backlog", "--json"))["items"]
    table = cli("backlog")
    await rows.publish(first)
    after = _json(cli("backlog", "--json"))["items"]

    assert {(str(ORG), 2), (str(other), 1)} == {(i["organizationId"], i["pending"]) for i in before}
    assert str(ORG) == before[0]["organizationId"]  # the largest first
    assert str(ORG) in table.stdout
    assert all(len(line) <= 80 for line in table.stdout.splitlines())
    assert {(str(ORG), 1), (str(other), 1)} == {(i["organizationId"], i["pending"]) for i in after}


async def test_an_empty_backlog_says_so(cli, rows: EventRows):
    result = cli("backlog")

    assert (ExitCode.OK, "no tenant event waits\n") == (result.returncode, result.stdout)


async def test_a_dead_letter_parks_its_aggregate_and_release_resumes_it(rows: EventRows, cli):
    await rows.add_staff(STAFF)
    dead = await rows.append(ORG, "order-7")
    later = await rows.append(ORG, "order-7")
    await rows.dead_letter(dead)
    dead_letter = await rows.dead_record(dead)

    parked = _json(cli("parked", "--json"))
    letters = _json(cli("dead-letters", "--unresolved", "--json"))
    released = _json(
        cli("release", str(dead_letter), "--staff", STAFF, "--reason", "ticket 12", "--json")
    )
    again = cli("release", str(dead_letter), "--staff", STAFF, "--reason", "ticket 12")

    [item] = parked["items"]
    assert (str(dead_letter), str(dead), "order-7", 1) == (
        item["deadLetterId"],
        item["eventId"],
        item["aggregateId"],
        item["waiting"],
    )
    assert [str(dead_letter)] == [i["id"] for i in letters["items"]]
    assert {"hasNextPage": False, "hasPreviousPage": False} == {
        k: letters["pageInfo"][k] for k in ("hasNextPage", "hasPreviousPage")
    }
    assert ("release", str(dead_letter), None, False) == (
        released["action"],
        released["deadLetterId"],
        released["recordId"],
        released["replayed"],
    )
    assert ExitCode.REFUSED == again.returncode  # a new request (no key): already resolved
    assert "already_released" in again.stderr
    assert [later] == [row[1] for row in await rows.claim()]
    assert [] == _json(cli("parked", "--json"))["items"]


async def test_a_republish_goes_first_and_a_retry_of_its_key_does_nothing_more(
    rows: EventRows, cli
):
    await rows.add_staff(STAFF)
    dead = await rows.append(ORG, "order-8")
    await rows.append(ORG, "order-8")
    await rows.dead_letter(dead)
    dead_letter = await rows.dead_record(dead)
    args = ("republish", str(dead_letter), "--staff", STAFF, "--reason", "target fixed")

    first = cli(*args, "--idempotency-key", "ticket-9")
    again = cli(*args, "--idempotency-key", "ticket-9")
    shown = _json(cli("show", str(dead), "--json"))

    assert (ExitCode.OK, ExitCode.OK) == (first.returncode, again.returncode), first.stderr
    assert first.stdout.startswith(f"republished {dead_letter} as ")
    assert again.stdout.startswith(f"already republished {dead_letter} as ")
    [republished] = [r for r in shown["records"] if r["republishOf"] == str(dead_letter)]
    assert first.stdout.split(" as ")[1].strip() == republished["id"]
    assert 2 == len(shown["records"])
    assert [(UUID(republished["id"]), dead)] == [(r[0], r[1]) for r in await rows.claim()]
    assert "payload" not in json.dumps(shown).replace("payloadBytes", "")


async def test_the_cli_refuses_what_it_cannot_do(rows: EventRows, cli):
    await rows.add_staff(STAFF)
    await rows.add_staff("stranger@example.com")
    await rows.rows("SELECT * FROM outbox.revoke_staff('stranger@example.com')")
    unknown = uuid.uuid4()

    not_found = cli("release", str(unknown), "--staff", STAFF, "--reason", "why")
    no_staff = cli("release", str(unknown), "--staff", "stranger@example.com", "--reason", "why")
    no_reason = cli("release", str(unknown), "--staff", STAFF, "--reason", " ")
    no_event = cli("show", str(unknown))
    two_cursors = cli("dead-letters", "--after", str(unknown), "--before", str(unknown))

    assert ExitCode.NOT_FOUND == not_found.returncode
    assert (ExitCode.REFUSED, True) == (no_staff.returncode, "42501" in no_staff.stderr)
    assert (ExitCode.USAGE, True) == (no_reason.returncode, "reason" in no_reason.stderr)
    assert ExitCode.NOT_FOUND == no_event.returncode
    assert ExitCode.USAGE == two_cursors.returncode


async def test_the_event_types_list_their_module_versions_and_retirement(rows: EventRows, cli):
    await rows.rows("SELECT events.publish_contract_version('demo.thing_happened', 2)")
    await rows.rows("SELECT events.register_event_type('demo.old_thing', 'demo', 'Gone')")
    await rows.rows("SELECT events.retire_event_type('demo.old_thing')")

    listed = _json(cli("types", "--json"))["items"]
    table = cli("types")

    assert [
        ("demo.old_thing", "demo", [], True),
        ("demo.thing_happened", "demo", [1, 2], False),
    ] == [
        (t["code"], t["module"], t["versions"], t["retiredAt"] is not None)
        for t in listed
        if t["module"] != "identity"  # the identity module's own types (0022)
    ]
    assert "demo.thing_happened" in table.stdout
