"""Reissue through the staff route: the old code stops working, the new one
confirms; idempotent replays, 409 and 422; one audit row; refusals."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from outbox.domain.delivery.failures import FailureClass
from outbox.domain.identity.tokens import token_digest
from tests.integration.identity.api import PASSWORD
from tests.integration.operator.staff_world import StaffWorld

pytestmark = pytest.mark.integration

BOB = "bob@example.com"


async def _audit(world: StaffWorld) -> list[tuple[object, ...]]:
    return await world.api.rows(
        "SELECT action, actor_id, message_id, new_message_id, idempotency_key"
        " FROM outbox.staff_audit WHERE action = 'reissue' ORDER BY id"
    )


async def _confirm(world: StaffWorld, code: str):
    return await world.api.post(
        "/sign-ups/confirmations", {"identifier": BOB, "code": code, "password": PASSWORD}
    )


async def test_a_reissued_code_replaces_the_old_one_and_confirms(world: StaffWorld):
    caller = await world.staff()
    dead = await world.dead_code(BOB)

    response = await world.reissue(dead.message_id, caller)

    assert 201 == response.status_code, response.text
    body = response.json()
    assert (str(dead.message_id), False) == (body["deadLetterId"], body["replayed"])
    assert "Idempotent-Replayed" not in response.headers
    delivery = await world.api.deliver_one()
    assert (BOB, body["messageId"]) == (delivery.destination, str(delivery.message_id))
    assert delivery.content.text != dead.code
    old = await _confirm(world, dead.code)
    assert (400, "urn:outbox:problem:invalid-code") == (old.status_code, old.json()["type"])
    assert 204 == (await _confirm(world, delivery.content.text)).status_code
    assert [("reissue", caller.identity_id, dead.message_id, delivery.message_id, "key-1")] == (
        await _audit(world)
    )


async def test_a_replay_answers_the_first_result_and_enqueues_nothing(world: StaffWorld):
    caller = await world.staff()
    dead = await world.dead_code(BOB)
    first = await world.reissue(dead.message_id, caller, key="same")

    again = await world.reissue(dead.message_id, caller, key="same")

    assert 201 == again.status_code
    assert "true" == again.headers["Idempotent-Replayed"]
    assert {**first.json(), "replayed": True} == again.json()
    assert [first.json()["messageId"]] == [str(m) for m in await world.pending()]
    assert 1 == len(await _audit(world))


async def test_the_same_key_for_another_dead_letter_is_422(world: StaffWorld):
    caller = await world.staff()
    first = await world.dead_code(BOB)
    second = await world.dead_code("carol@example.com")
    await world.reissue(first.message_id, caller, key="same")

    response = await world.reissue(second.message_id, caller, key="same")

    assert 422 == response.status_code
    assert "urn:outbox:problem:idempotency-key-reused" == response.json()["type"]
    assert 1 == len(await world.pending())


async def test_a_duplicate_while_the_first_is_running_is_409(world: StaffWorld, connect_as):
    caller = await world.staff()
    dead = await world.dead_code(BOB)
    async with connect_as("identity_service", autocommit=False) as running:
        await running.execute(
            "SELECT * FROM outbox.staff_reissue_dead_letter(%s, %s, %s, gen_random_uuid(), %s,"
            " %s, %s)",
            (
                caller.identity_id,
                token_digest(caller.elevation),
                dead.message_id,
                "v1.test.c2FsdA.bm9uY2U.Y2lwaGVy",
                "$argon2id$v=19$m=8,t=1,p=1$c2FsdA$aGFzaA",
                "same",
            ),
        )

        response = await world.reissue(dead.message_id, caller, key="same")

        assert 409 == response.status_code
        assert "urn:outbox:problem:request-in-progress" == response.json()["type"]
        await running.rollback()
    assert [] == await world.pending()


async def test_two_concurrent_reissues_enqueue_exactly_one_message(world: StaffWorld):
    caller = await world.staff()
    dead = await world.dead_code(BOB)

    responses = await asyncio.gather(
        world.reissue(dead.message_id, caller, key="first"),
        world.reissue(dead.message_id, caller, key="second"),
    )

    assert [201, 409] == sorted(r.status_code for r in responses)
    [refused] = [r.json() for r in responses if r.status_code == 409]
    assert ("urn:outbox:problem:reissue-refused", "newer_message_exists") == (
        refused["type"],
        refused["reason"],
    )
    assert 1 == len(await world.pending())
    assert 1 == len(await _audit(world))


async def test_two_concurrent_replays_of_one_key_enqueue_exactly_one_message(world: StaffWorld):
    caller = await world.staff()
    dead = await world.dead_code(BOB)

    responses = await asyncio.gather(
        *(world.reissue(dead.message_id, caller, key="same") for _ in range(3))
    )

    assert {201} <= {r.status_code for r in responses} <= {201, 409}
    assert 1 == len(await world.pending())
    assert 1 == len(await _audit(world))


async def _superseded(world: StaffWorld):
    """A sign-up message withdrawn by a resend (``superseded_by_resend``)."""
    await world.api.post("/sign-ups", {"identifier": BOB})
    [(first,)] = await world.api.rows("SELECT id FROM outbox.messages WHERE destination = %s", BOB)
    await world.api.post("/sign-ups", {"identifier": BOB})
    return first


async def _consumed(world: StaffWorld):
    dead = await world.dead_code(BOB)
    assert 204 == (await _confirm(world, dead.code)).status_code
    return dead.message_id


async def _locked(world: StaffWorld):
    dead = await world.dead_code(BOB)
    for _ in range(5):
        await _confirm(world, "000000" if dead.code != "000000" else "111111")
    return dead.message_id


async def _expired(world: StaffWorld):
    dead = await world.dead_code(BOB)
    await world.api.execute(
        "UPDATE identity.challenges SET expires_at = now() - interval '1 second',"
        " created_at = now() - interval '1 minute'"
    )
    return dead.message_id


async def _newer_message(world: StaffWorld):
    dead = await world.dead_code(BOB)
    await world.api.post("/sign-ups", {"identifier": BOB})  # a resend
    return dead.message_id


REFUSALS = {
    "superseded": (_superseded, "not_a_delivery_failure"),
    "consumed": (_consumed, "challenge_consumed"),
    "locked": (_locked, "challenge_locked"),
    "expired": (_expired, "challenge_expired"),
    "newer_message": (_newer_message, "newer_message_exists"),
}


@pytest.mark.parametrize("case", list(REFUSALS))
async def test_a_reissue_that_cannot_help_is_refused_with_its_reason(world: StaffWorld, case):
    caller = await world.staff()
    make, reason = REFUSALS[case]
    message_id = await make(world)
    pending_before = await world.pending()

    response = await world.reissue(message_id, caller)

    assert 409 == response.status_code, response.text
    assert ("urn:outbox:problem:reissue-refused", reason) == (
        response.json()["type"],
        response.json()["reason"],
    )
    assert pending_before == await world.pending()
    assert [] == await _audit(world)


async def test_an_invitation_is_never_reissued(world: StaffWorld):
    caller = await world.staff()
    token = await world.api.signed_up("owner@example.com")
    organization = (await world.api.post("/organizations", {"name": "Acme"}, token=token)).json()
    world.api.provider.failures_for["guest@example.com"] = world.api.provider.refuse(
        FailureClass.REJECTED
    )
    invited = await world.api.post(
        f"/organizations/{organization['id']}/invitations",
        {"email": "guest@example.com"},
        token=token,
    )
    assert 201 == invited.status_code, invited.text
    await world.api.deliver()
    [(message_id,)] = await world.api.rows(
        "SELECT id FROM outbox.messages WHERE purpose = 'invitation' AND state = 'dead_lettered'"
    )

    response = await world.reissue(message_id, caller)

    assert (409, "not_reissuable") == (response.status_code, response.json()["reason"])


async def test_an_unknown_dead_letter_is_404(world: StaffWorld):
    caller = await world.staff()

    response = await world.reissue(uuid.uuid4(), caller)

    assert (404, "urn:outbox:problem:not-found") == (
        response.status_code,
        response.json()["type"],
    )


async def test_a_missing_idempotency_key_is_a_validation_problem(world: StaffWorld):
    caller = await world.staff()
    dead = await world.dead_code(BOB)

    response = await world.staff_client.post(
        f"/platform-admin/security-outbox/dead-letters/{dead.message_id}/reissues",
        headers={"Authorization": f"Bearer {caller.token}", "Elevation-Token": caller.elevation},
    )

    assert (400, "urn:outbox:problem:validation-error") == (
        response.status_code,
        response.json()["type"],
    )
    assert [] == await world.pending()
