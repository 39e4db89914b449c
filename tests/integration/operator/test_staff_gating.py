"""Staff gating through HTTP: a bearer session of an active staff member and a fresh step-up
of the same session for every route. 403 otherwise."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.integration.operator.staff_world import STAFF, StaffWorld

pytestmark = pytest.mark.integration

READS = ["/backlog", "/dead-letters"]


def _type(response) -> str:  # type: ignore[no-untyped-def]
    assert "application/problem+json" == response.headers["content-type"]
    return str(response.json()["type"]).removeprefix("urn:outbox:problem:")


@pytest.mark.parametrize("path", READS)
async def test_reads_without_a_bearer_token_are_401(world: StaffWorld, path):
    response = await world.staff_client.get("/platform-admin/security-outbox" + path)

    assert (401, "unauthenticated") == (response.status_code, _type(response))


@pytest.mark.parametrize("path", READS)
async def test_reads_by_someone_who_is_not_staff_are_403(world: StaffWorld, path):
    stranger = await world.staff("stranger@example.com", grant=False)

    response = await world.get(path, stranger)

    assert (403, "staff-required") == (response.status_code, _type(response))


@pytest.mark.parametrize("path", READS)
@pytest.mark.parametrize("elevation", [None, "not-a-token"], ids=["missing", "unknown"])
async def test_reads_without_a_valid_step_up_are_403(world: StaffWorld, path, elevation):
    caller = await world.staff()

    response = await world.get(path, caller, elevation=elevation)

    assert (403, "step-up-required") == (response.status_code, _type(response))


async def test_a_reissue_by_someone_who_is_not_staff_is_403_even_with_a_step_up(
    world: StaffWorld,
):
    stranger = await world.staff("stranger@example.com", grant=False)
    dead = await world.dead_code()

    response = await world.reissue(dead.message_id, stranger)

    assert (403, "staff-required") == (response.status_code, _type(response))
    assert [] == await world.pending()


@pytest.mark.parametrize("path", READS)
async def test_a_revoked_staff_member_is_refused_at_once(world: StaffWorld, path):
    caller = await world.staff()
    assert 200 == (await world.get(path, caller)).status_code
    await world.admin.revoke_staff(STAFF)

    response = await world.get(path, caller)

    assert (403, "staff-required") == (response.status_code, _type(response))


async def test_a_revoked_staff_member_cannot_reissue(world: StaffWorld):
    caller = await world.staff()
    dead = await world.dead_code()
    await world.admin.revoke_staff(STAFF)

    response = await world.reissue(dead.message_id, caller)

    assert (403, "staff-required") == (response.status_code, _type(response))
    assert [] == await world.pending()


@pytest.mark.parametrize("elevation", [None, "not-a-token"], ids=["missing", "unknown"])
async def test_a_reissue_without_a_valid_step_up_is_403(world: StaffWorld, elevation):
    caller = await world.staff()
    dead = await world.dead_code()

    response = await world.reissue(dead.message_id, caller, elevation=elevation)

    assert (403, "step-up-required") == (response.status_code, _type(response))
    assert [] == await world.pending()


async def test_an_expired_step_up_is_403(world: StaffWorld):
    caller = await world.staff()
    dead = await world.dead_code()
    world.api.clock.advance(timedelta(minutes=6))

    response = await world.reissue(dead.message_id, caller)

    assert (403, "step-up-required") == (response.status_code, _type(response))


async def test_a_step_up_of_another_session_is_403(world: StaffWorld):
    caller = await world.staff()
    other_session = await world.api.sign_in(STAFF)
    dead = await world.dead_code()

    response = await world.staff_client.post(
        f"/platform-admin/security-outbox/dead-letters/{dead.message_id}/reissues",
        headers={
            "Authorization": f"Bearer {other_session}",
            "Idempotency-Key": "k",
            "Elevation-Token": caller.elevation,
        },
    )

    assert (403, "step-up-required") == (response.status_code, _type(response))


async def test_the_staff_routes_and_their_problems_are_in_the_openapi_schema(world: StaffWorld):
    schema = (await world.staff_client.get("/schema/openapi.json")).json()

    paths = schema["paths"]
    reissue = paths["/platform-admin/security-outbox/dead-letters/{message_id}/reissues"]["post"]
    assert {"201", "400", "401", "403", "404", "409", "413", "415", "422", "500", "503"} == set(
        reissue["responses"]
    )
    assert "step-up-required" in reissue["responses"]["403"]["description"]
    assert {"Idempotency-Key", "Elevation-Token"} <= {p["name"] for p in reissue["parameters"]}
    for path in ("backlog", "dead-letters"):
        read = paths[f"/platform-admin/security-outbox/{path}"]["get"]
        assert "staff-required" in read["responses"]["403"]["description"]
        assert "step-up-required" in read["responses"]["403"]["description"]
        assert "Elevation-Token" in {p["name"] for p in read["parameters"]}
        assert [{"BearerToken": []}] == read["security"]
