"""A reissue says what will become of the new code: refused, with nothing changed, when no
provider sends its channel; done, and waiting, when the channel's provider is paused.

Issue 29, finding 6: reissuing a dead code to a channel with no provider answered "a new code
is on its way", replaced the person's code, and the copy dead-lettered at once.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from uuid import UUID

import pytest

from outbox.adapters.postgres.dispatch_store import PostgresDispatchStore
from outbox.domain.channels import Channel
from tests.integration.console.world import ConsoleWorld, running_console_world

pytestmark = pytest.mark.integration

STAFF = "staff@example.com"
PHONE = "+34612345678"
DEAD = "SELECT id FROM outbox.messages WHERE state = 'dead_lettered' AND destination = %s"


@pytest.fixture
async def world(
    database_url: str, dispatch_store: PostgresDispatchStore, tmp_path: Path
) -> AsyncIterator[ConsoleWorld]:
    """The admin app and the worker of a deployment that sends e-mail only (sms: none)."""
    async for running in running_console_world(
        database_url, dispatch_store, tmp_path, unserved=frozenset({Channel.SMS})
    ):
        yield running


async def _dead_sms_code(world: ConsoleWorld) -> tuple[UUID, str]:
    """A sign-up code by SMS, dead-lettered by the worker (no provider); and its challenge's
    code hash."""
    response = await world.staff.api.post("/sign-ups", {"identifier": PHONE})
    assert 201 == response.status_code, response.text
    assert [] == await world.staff.api.deliver()
    [(message_id,)] = await world.staff.api.rows(DEAD, PHONE)
    return message_id, await _code_hash(world)


async def _code_hash(world: ConsoleWorld) -> str:
    [(code_hash,)] = await world.staff.api.rows(
        "SELECT code_hash FROM identity.challenges WHERE identifier = %s", PHONE
    )
    return str(code_hash)


async def _messages_to_phone(world: ConsoleWorld) -> int:
    [(count,)] = await world.staff.api.rows(
        "SELECT count(*) FROM outbox.messages WHERE destination = %s", PHONE
    )
    return int(count)


async def test_the_staff_route_refuses_a_code_no_provider_would_send(world: ConsoleWorld):
    message_id, code_hash = await _dead_sms_code(world)
    caller = await world.staff.staff()

    response = await world.staff.reissue(message_id, caller)

    assert 409 == response.status_code, response.text
    assert "urn:outbox:problem:reissue-refused" == response.json()["type"]
    assert "no_provider" == response.json()["reason"]
    assert code_hash == await _code_hash(world)  # the person's code still works
    assert 1 == await _messages_to_phone(world)


async def test_the_console_refuses_it_and_offers_no_reissue_for_it(world: ConsoleWorld):
    message_id, code_hash = await _dead_sms_code(world)
    await world.account(STAFF)
    async with world.client() as client:
        csrf = await world.stepped_up(client, STAFF)
        detail = await client.get(f"/console/messages/{message_id}")
        listed = await client.get("/console/messages?state=dead_lettered&purpose=sign_up")
        preview = await client.get(
            "/console/messages/bulk",
            params={"state": "dead_lettered", "purpose": "sign_up", "action": "reissue"},
        )
        refused = await client.post(
            f"/console/messages/{message_id}/repairs",
            data={"csrf": csrf, "action": "reissue", "idempotency_key": "k-1", "reason": "t-1"},
        )

    assert "Reissue a new code" not in detail.text
    assert "no provider sends sms" in detail.text
    assert 'value="reissue"' not in listed.text
    assert "will be reissued" not in preview.text
    assert 409 == refused.status_code
    assert "no provider sends sms" in refused.text
    assert "on its way" not in refused.text
    assert code_hash == await _code_hash(world)
    assert 1 == await _messages_to_phone(world)


async def test_outboxctl_refuses_it_with_the_refused_exit_code(world: ConsoleWorld):
    message_id, code_hash = await _dead_sms_code(world)
    await world.account(STAFF)
    world.staff.env["OUTBOX_CHANNEL_SMS"] = "none"

    result = await world.staff.cli("dead-letters", "reissue", str(message_id), "--staff", STAFF)

    assert 6 == result.exit_code, result.output
    assert "refused (no_provider)" in result.stderr
    assert code_hash == await _code_hash(world)
    assert 1 == await _messages_to_phone(world)


async def test_a_reissue_while_the_provider_is_paused_says_the_code_waits(world: ConsoleWorld):
    dead = await world.staff.dead_code()
    second = await world.staff.dead_code("carol@example.com")
    caller = await world.staff.staff()
    await world.account("other@example.com")
    async with world.client() as client:
        csrf = await world.stepped_up(client, "other@example.com")
        await world.staff.api.rows(
            "SELECT outbox.pause_provider(%s, 'smtp', 'ticket 7')", caller.identity_id
        )
        response = await world.staff.reissue(dead.message_id, caller)
        done = await client.post(
            f"/console/messages/{second.message_id}/repairs",
            data={"csrf": csrf, "action": "reissue", "idempotency_key": "k-2", "reason": "t-2"},
        )
        page = await client.get(done.headers["location"])

    assert 201 == response.status_code, response.text
    assert "smtp" == response.json()["waitsForProvider"]
    assert 303 == done.status_code, done.text
    assert "on its way" not in page.text
    assert "waits until smtp is resumed" in page.text


async def test_a_served_channel_answers_as_before(world: ConsoleWorld):
    dead = await world.staff.dead_code()
    caller = await world.staff.staff()

    response = await world.staff.reissue(dead.message_id, caller)

    assert 201 == response.status_code, response.text
    assert response.json()["waitsForProvider"] is None
    assert re.fullmatch(r"[0-9a-f-]{36}", response.json()["messageId"])
