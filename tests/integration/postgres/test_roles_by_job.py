"""Roles by job: what a producer is granted cannot act as anyone (finding 3).

Each attack is plain SQL as the role, the way another service holding the role would try it:
mint a session or an elevation for someone else's account with a token of its choosing, set
their password, read password hashes, and call the staff functions in a staff member's name.
"""

from __future__ import annotations

import hashlib
import uuid

import pytest
from psycopg import errors

from tests.contract.operator_harness import (
    ENVELOPE,
    PostgresOperatorHarness,
    challenge,
    dead_letter,
)

pytestmark = pytest.mark.integration

# The role a producer service is told to use, and the deprecated name older docs gave it.
PRODUCER_ROLES = ["outbox_producer", "outbox_runtime"]
ATTACKER_HASH = "$argon2id$v=19$m=8,t=1,p=1$YXR0YWNrZXI$YXR0YWNrZXItY2hvc2Vu"
ATTACKER_TOKEN = "a-token-the-attacker-chose"
DIGEST = hashlib.sha256(ATTACKER_TOKEN.encode()).hexdigest()


async def _refused(connect_as, role: str, statement: str, *params: object) -> None:
    async with connect_as(role) as conn:
        with pytest.raises(errors.InsufficientPrivilege) as caught:
            await conn.execute(statement.encode(), params)
    assert "42501" == caught.value.sqlstate


@pytest.mark.parametrize("role", PRODUCER_ROLES)
async def test_a_producer_cannot_start_a_session_for_another_account(harness, connect_as, role):
    victim = await harness.add_identity("victim@example.com")

    await _refused(
        connect_as,
        role,
        "SELECT identity.add_session(gen_random_uuid(), %s, %s, now(), now() + interval '1 day')",
        victim,
        DIGEST,
    )

    assert [] == await harness._execute("SELECT id FROM identity.sessions")


@pytest.mark.parametrize("role", PRODUCER_ROLES)
async def test_a_producer_cannot_elevate_another_account(harness, connect_as, role):
    victim = await harness.add_identity("victim@example.com")
    session = uuid.uuid4()
    await harness._execute(
        "INSERT INTO identity.sessions (id, identity_id, token_digest, created_at, expires_at)"
        " VALUES (%s, %s, %s, now(), now() + interval '1 day')",
        (session, victim, hashlib.sha256(b"the victim's own token").hexdigest()),
    )

    await _refused(
        connect_as,
        role,
        "SELECT identity.elevate_session(gen_random_uuid(), %s, %s, gen_random_uuid(), %s,"
        " now(), now() + interval '5 minutes')",
        session,
        victim,
        DIGEST,
    )

    assert [] == await harness._execute("SELECT id FROM identity.elevations")


@pytest.mark.parametrize("role", PRODUCER_ROLES)
async def test_a_producer_cannot_set_a_password(harness, connect_as, role):
    victim = await harness.add_identity("victim@example.com")

    await _refused(
        connect_as, role, "SELECT identity.save_password(%s, %s, now())", victim, ATTACKER_HASH
    )

    assert [] == await harness._execute("SELECT identity_id FROM identity.password_credentials")


@pytest.mark.parametrize("role", PRODUCER_ROLES)
async def test_a_producer_cannot_read_password_hashes(harness, connect_as, role):
    victim = await harness.add_identity("victim@example.com")
    await harness._execute(
        "INSERT INTO identity.password_credentials VALUES (%s, %s, now())", (victim, ATTACKER_HASH)
    )

    await _refused(
        connect_as,
        role,
        "SELECT password_hash FROM identity.find_account(%s)",
        "victim@example.com",
    )


async def _reissuable(harness: PostgresOperatorHarness) -> tuple[uuid.UUID, uuid.UUID]:
    """(a staff member's identity, a dead letter whose code may be reissued)."""
    await harness.add_identity("staff@example.com")
    staff = (await harness.admin.grant_staff("staff@example.com")).identity_id
    person = await harness.add_identity("person@example.com")
    opened = challenge(harness, person)
    await harness.put_challenge(opened)
    letter = dead_letter(harness, subject_id=opened.id)
    await harness.put(letter)
    return staff, letter.id


REISSUE_AS = (
    "SELECT outcome FROM outbox.reissue_dead_letter(%s, %s, gen_random_uuid(), %s, %s, 'k')"
)


@pytest.mark.parametrize("role", [*PRODUCER_ROLES, "identity_service"])
async def test_no_api_or_producer_role_reissues_in_a_staff_members_name(harness, connect_as, role):
    """The database operator's reissue takes a staff id on trust: only its own login may."""
    staff, letter = await _reissuable(harness)

    await _refused(connect_as, role, REISSUE_AS, staff, letter, ENVELOPE, ATTACKER_HASH)

    assert [("staff_grant", None)] == [(a[0], a[1]) for a in await harness.audit()]


# The staff functions check the staff member's own fresh elevation -------------------------------


async def _elevation(
    harness: PostgresOperatorHarness,
    identity_id: uuid.UUID,
    *,
    expires: str = "5 minutes",
    session_revoked: bool = False,
) -> str:
    """Sign ``identity_id`` in and step up (rows put in place); the elevation token's digest."""
    session, token = uuid.uuid4(), uuid.uuid4().hex
    await harness._execute(
        "INSERT INTO identity.sessions (id, identity_id, token_digest, created_at, expires_at,"
        " revoked_at, staff) VALUES (%s, %s, %s, now(), now() + interval '1 day',"
        " CASE WHEN %s THEN now() END, true)",
        (session, identity_id, hashlib.sha256(b"s" + token.encode()).hexdigest(), session_revoked),
    )
    digest = hashlib.sha256(token.encode()).hexdigest()
    await harness._execute(
        "INSERT INTO identity.elevations (id, session_id, identity_id, token_digest, created_at,"
        " expires_at) VALUES (gen_random_uuid(), %s, %s, %s, now() - interval '10 minutes',"
        " now() + %s::interval)",
        (session, identity_id, digest, expires),
    )
    return digest


STAFF_REISSUE = (
    "SELECT outcome FROM outbox.staff_reissue_dead_letter(%s, %s, %s, gen_random_uuid(), %s, %s,"
    " 'k')"
)


async def _step_up_refused(connect_as, statement: str, *params: object) -> str:
    async with connect_as("identity_service") as conn:
        with pytest.raises(errors.InsufficientPrivilege) as caught:
            await conn.execute(statement.encode(), params)
    return str(caught.value.diag.message_primary)


async def test_the_api_role_cannot_reissue_for_a_staff_member_without_their_elevation(
    harness, connect_as
):
    staff, letter = await _reissuable(harness)
    await harness.add_identity("other-staff@example.com")
    other = (await harness.admin.grant_staff("other-staff@example.com")).identity_id
    others_elevation = await _elevation(harness, other)

    for presented in (None, DIGEST, others_elevation):
        assert "fresh step-up required" == await _step_up_refused(
            connect_as, STAFF_REISSUE, staff, presented, letter, ENVELOPE, ATTACKER_HASH
        )

    assert ["staff_grant", "staff_grant"] == [a[0] for a in await harness.audit()]


@pytest.mark.parametrize(
    "elevation",
    [{"expires": "-1 second"}, {"session_revoked": True}],
    ids=["expired", "signed-out"],
)
async def test_a_stale_elevation_is_refused(harness, connect_as, elevation):
    staff, letter = await _reissuable(harness)
    digest = await _elevation(harness, staff, **elevation)

    assert "fresh step-up required" == await _step_up_refused(
        connect_as, STAFF_REISSUE, staff, digest, letter, ENVELOPE, ATTACKER_HASH
    )


async def test_an_elevated_account_that_is_not_staff_is_refused(harness, connect_as):
    _, letter = await _reissuable(harness)
    person = await harness.add_identity("elevated@example.com")
    digest = await _elevation(harness, person)

    assert "staff membership required" == await _step_up_refused(
        connect_as, STAFF_REISSUE, person, digest, letter, ENVELOPE, ATTACKER_HASH
    )


async def test_a_reissue_with_the_staff_members_elevation_is_audited_with_it(harness, connect_as):
    staff, letter = await _reissuable(harness)
    digest = await _elevation(harness, staff)

    async with connect_as("identity_service") as conn:
        cursor = await conn.execute(
            STAFF_REISSUE.encode(), (staff, digest, letter, ENVELOPE, ATTACKER_HASH)
        )
        assert ("reissued",) == await cursor.fetchone()

    [(actor, used)] = await harness._execute(
        "SELECT a.actor_id, e.token_digest FROM outbox.staff_audit AS a"
        " JOIN identity.elevations AS e ON e.id = a.elevation_id WHERE a.action = 'reissue'"
    )
    assert (staff, digest) == (actor, used)


STAFF_READS = {
    "backlog": "SELECT * FROM outbox.staff_backlog(%s, %s)",
    "dead_letters": "SELECT * FROM outbox.staff_dead_letters(%s, %s, NULL, NULL, 10)",
    "message_detail": "SELECT * FROM outbox.staff_message_detail(%s, %s, gen_random_uuid())",
    "message_attempts": "SELECT * FROM outbox.staff_message_attempts(%s, %s, gen_random_uuid())",
    "requeue": (
        "SELECT * FROM outbox.staff_requeue_dead_letter(%s, %s, gen_random_uuid(),"
        " gen_random_uuid(), 'k')"
    ),
}


@pytest.mark.parametrize("statement", STAFF_READS.values(), ids=list(STAFF_READS))
async def test_every_staff_function_needs_the_staff_members_elevation(
    harness, connect_as, statement
):
    staff, _ = await _reissuable(harness)

    assert "fresh step-up required" == await _step_up_refused(connect_as, statement, staff, DIGEST)

    async with connect_as("identity_service") as conn:
        await conn.execute(statement.encode(), (staff, await _elevation(harness, staff)))
