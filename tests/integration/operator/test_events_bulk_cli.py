"""``outboxctl events list|bulk``, ``outboxctl workers`` and the break glass ``outboxctl staff
step-up`` against the real database (the last through the real admin app too): what an
operator runs when the console cannot help."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from uuid import UUID

import pytest

from outbox.entrypoints.cli.exit_codes import ExitCode
from tests.events_rows import EventRows
from tests.security.http_app import PASSWORD, serving

pytestmark = pytest.mark.integration

ORG = UUID("00000000-0000-4000-8000-0000000000c7")
STAFF = "staff@example.com"


def _json(result: Any) -> Any:
    assert ExitCode.OK == result.returncode, result.stderr
    return json.loads(result.stdout)


async def test_events_list_finds_by_filter_and_bulk_releases_what_it_counted(
    rows: EventRows, cli
) -> None:
    await rows.add_staff(STAFF)
    dead = []
    for n in range(3):
        event = await rows.append(ORG, f"order-{n}")
        await rows.dead_letter(event)
        dead.append(await rows.dead_record(event))
    waiting = await rows.append(ORG, "order-0")  # parked behind the first

    listed = _json(
        cli("events", "list", "--state", "dead_lettered", "--organization", str(ORG), "--json")
    )
    table = cli("events", "list", "--aggregate", "order-0")
    dry = _json(
        cli(
            "events",
            "bulk",
            "release",
            "--staff",
            STAFF,
            "--reason",
            "INC-7",
            "--dry-run",
            "--json",
        )
    )
    first = _json(
        cli(
            "events",
            "bulk",
            "release",
            "--staff",
            STAFF,
            "--reason",
            "INC-7",
            "--limit",
            "2",
            "--json",
        )
    )
    rest = cli("events", "bulk", "release", "--staff", STAFF, "--reason", "INC-7")
    nothing = cli("events", "bulk", "release", "--staff", STAFF, "--reason", "INC-7")
    stranger = cli("events", "bulk", "cancel", "--staff", "nobody@example.com", "--reason", "x")

    assert 3 == len(listed["items"])
    assert {"dead_lettered"} == {e["state"] for e in listed["items"]}
    assert ExitCode.OK == table.returncode, table.stderr
    assert str(waiting) in table.stdout
    assert {"action": "release", "count": 3} == {k: dry[k] for k in ("action", "count")}
    assert {"changed": 2, "remaining": 1} == {k: first[k] for k in ("changed", "remaining")}
    assert "1 unresolved dead letters match" in rest.stdout
    assert "released 1;" in rest.stdout
    assert "0 unresolved dead letters match" in nothing.stdout
    assert ExitCode.NOT_FOUND == stranger.returncode
    [(count,)] = await rows.rows(
        "SELECT count(*) FROM events.operator_audit WHERE action = 'release' AND reason = 'INC-7'"
    )
    assert 3 == count
    assert [waiting] == [row[1] for row in await rows.claim()]


async def test_workers_lists_each_process_lane(rows: EventRows, cli) -> None:
    async with await rows.connect("outbox_worker") as conn:
        await conn.execute(
            "SELECT outbox.worker_heartbeat('host-a:41', 'security', now() - interval '2 min',"
            " false)"
        )

    listed = _json(cli("workers", "--json"))
    table = cli("workers")

    assert [("host-a:41", "security", True)] == [
        (i["owner"], i["lane"], i["running"]) for i in listed["items"]
    ]
    assert "host-a:41" in table.stdout
    assert "running" in table.stdout


async def test_break_glass_step_up_lets_staff_in_when_no_code_can_arrive(
    database_url: str, rows: EventRows, cli
) -> None:
    async with serving(database_url) as app:
        await app.signed_up(STAFF)
        await rows.rows("SELECT * FROM outbox.grant_staff(%s)", STAFF)
        await app.signed_up("member@example.com")
        session = await app.admin.post(
            "/sessions", json={"identifier": STAFF, "password": PASSWORD}
        )
        token = str(session.json()["token"])
        bearer = {"Authorization": f"Bearer {token}"}
        [(messages_before,)] = await rows.rows("SELECT count(*) FROM outbox.messages")

        glass = await asyncio.to_thread(
            cli, "staff", "step-up", STAFF, "--reason", "INC-9: email provider paused", "--json"
        )
        code = _json(glass)["code"]
        wrong = await app.admin.post(
            "/step-ups/confirmations",
            json={"code": "000000" if code != "000000" else "111111"},
            headers=bearer,
        )
        confirmed = await app.admin.post(
            "/step-ups/confirmations", json={"code": code}, headers=bearer
        )
        elevation = str(confirmed.json()["elevationToken"])
        workers = await app.admin.get(
            "/platform-admin/workers/", headers={**bearer, "Elevation-Token": elevation}
        )
        not_staff = await asyncio.to_thread(
            cli, "staff", "step-up", "member@example.com", "--reason", "INC-9"
        )
        no_reason = await asyncio.to_thread(cli, "staff", "step-up", STAFF, "--reason", "")
        [(messages_after,)] = await rows.rows("SELECT count(*) FROM outbox.messages")

    assert 400 <= wrong.status_code < 500
    assert 201 == confirmed.status_code, confirmed.text
    assert 200 == workers.status_code, workers.text
    assert ExitCode.REFUSED == not_staff.returncode
    assert "not an active staff member" in not_staff.stderr
    assert ExitCode.USAGE == no_reason.returncode
    assert messages_before == messages_after  # nothing was sent
    audit = await rows.rows(
        "SELECT action, console_reason FROM outbox.staff_audit WHERE action = 'break_glass_step_up'"
    )
    assert [("break_glass_step_up", "INC-9: email provider paused")] == audit
    assert code not in glass.stderr
