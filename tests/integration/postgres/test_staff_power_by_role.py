"""Staff power comes only from the admin listener's role and a consumed step-up challenge.

The attack (issue 28, finding 1): a login holding only ``identity_service`` (the public
API's) minted a session and an elevation for a staff member with ``identity.add_session``
and ``identity.add_elevation``, then paused a provider through ``outbox.staff_pause_provider``
in that member's name. Now a session the public API's role starts is never a staff session,
an elevation exists only as the result of consuming a step-up challenge of the session's own
identity, and only ``staff_service`` (the admin listener's role) starts staff sessions.
"""

from __future__ import annotations

import hashlib
import uuid

import pytest
from psycopg import errors

pytestmark = pytest.mark.integration

SESSION_DIGEST = hashlib.sha256(b"a forged session token").hexdigest()
ELEVATION_DIGEST = hashlib.sha256(b"a forged elevation token").hexdigest()
CODE_HASH = "$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo"
PAUSE = "SELECT outbox.staff_pause_provider(%s, %s, 'email', 'forged')"
CONSUMED_STEP_UP = (
    "SELECT identity.save_challenge(%s, 'step_up', %s, 'staff@example.com', 'email', %s, 0,"
    " 'consumed', now() - interval '1 minute', now() + interval '9 minutes', now())"
)


async def _staff_member(connect_as) -> uuid.UUID:
    member = uuid.uuid4()
    async with connect_as() as conn:
        await conn.execute(
            "INSERT INTO identity.identities (id, created_at) VALUES (%s, now())", (member,)
        )
        await conn.execute(
            "INSERT INTO identity.staff_members (identity_id, granted_at) VALUES (%s, now())",
            (member,),
        )
    return member


async def _paused(connect_as) -> bool:
    async with connect_as() as conn:
        cursor = await conn.execute(
            "SELECT count(*) FROM outbox.provider_pauses WHERE provider = 'email'"
        )
        row = await cursor.fetchone()
    return row is not None and row[0] > 0


async def test_the_public_apis_role_cannot_forge_a_staff_members_step_up(connect_as):
    member = await _staff_member(connect_as)
    session, challenge = uuid.uuid4(), uuid.uuid4()

    async with connect_as("identity_service") as conn:
        await conn.execute(
            "SELECT identity.add_session(%s, %s, %s, now(), now() + interval '1 hour')",
            (session, member, SESSION_DIGEST),
        )
        # Everything this role may do to make an elevation: a step-up challenge of the
        # member's, saved as consumed, then the elevation that consuming it grants.
        await conn.execute(CONSUMED_STEP_UP, (challenge, member, CODE_HASH))
        await conn.execute(
            "SELECT identity.elevate_session(%s, %s, %s, %s, %s, now(),"
            " now() + interval '5 minutes')",
            (uuid.uuid4(), session, member, challenge, ELEVATION_DIGEST),
        )
        with pytest.raises(errors.InsufficientPrivilege, match="fresh step-up required"):
            await conn.execute(PAUSE, (member, ELEVATION_DIGEST))

    assert not await _paused(connect_as)


@pytest.mark.parametrize(
    "statement",
    [
        (
            "SELECT identity.add_staff_session(gen_random_uuid(), %s, %s, now(),"
            " now() + interval '1 hour')"
        ),
        (
            "SELECT identity.elevate_staff_session(gen_random_uuid(), gen_random_uuid(), %s,"
            " gen_random_uuid(), %s, now(), now() + interval '5 minutes')"
        ),
    ],
)
async def test_the_public_apis_role_cannot_start_staff_sessions_or_elevate_them(
    connect_as, statement
):
    member = await _staff_member(connect_as)

    async with connect_as("identity_service") as conn:
        with pytest.raises(errors.InsufficientPrivilege):
            await conn.execute(statement.encode(), (member, SESSION_DIGEST))


async def test_an_elevation_needs_a_consumed_step_up_of_the_sessions_identity(connect_as):
    member = await _staff_member(connect_as)
    other = await _staff_member(connect_as)
    session, open_challenge, others_challenge = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()

    async with connect_as("staff_service") as conn:
        await conn.execute(
            "SELECT identity.add_staff_session(%s, %s, %s, now(), now() + interval '1 hour')",
            (session, member, SESSION_DIGEST),
        )
        await conn.execute(
            "SELECT identity.save_challenge(%s, 'step_up', %s, 'staff@example.com', 'email',"
            " %s, 0, 'open', now(), now() + interval '10 minutes', NULL)",
            (open_challenge, member, CODE_HASH),
        )
        await conn.execute(CONSUMED_STEP_UP, (others_challenge, other, CODE_HASH))
        for challenge in (open_challenge, others_challenge, uuid.uuid4()):
            with pytest.raises(errors.InsufficientPrivilege, match="consumed step-up"):
                await conn.execute(
                    "SELECT identity.elevate_staff_session(%s, %s, %s, %s, %s, now(),"
                    " now() + interval '5 minutes')",
                    (uuid.uuid4(), session, member, challenge, ELEVATION_DIGEST),
                )


async def test_the_admin_listeners_role_elevates_its_session_once_per_step_up(connect_as):
    member = await _staff_member(connect_as)
    session, challenge = uuid.uuid4(), uuid.uuid4()
    elevate = (
        "SELECT identity.elevate_staff_session(%s, %s, %s, %s, %s, now(),"
        " now() + interval '5 minutes')"
    )

    async with connect_as("staff_service") as conn:
        await conn.execute(
            "SELECT identity.add_staff_session(%s, %s, %s, now(), now() + interval '1 hour')",
            (session, member, SESSION_DIGEST),
        )
        await conn.execute(CONSUMED_STEP_UP, (challenge, member, CODE_HASH))
        await conn.execute(elevate, (uuid.uuid4(), session, member, challenge, ELEVATION_DIGEST))
        await conn.execute(PAUSE, (member, ELEVATION_DIGEST))
        with pytest.raises(errors.InsufficientPrivilege, match="consumed step-up"):
            await conn.execute(
                elevate,
                (uuid.uuid4(), session, member, challenge, hashlib.sha256(b"again").hexdigest()),
            )

    assert await _paused(connect_as)


@pytest.mark.parametrize(
    ("made", "reads"),
    [("10 minutes", True), ("9 hours", False)],
    ids=["expired-but-recent", "older-than-the-read-window"],
)
async def test_a_step_up_reads_for_hours_but_changes_nothing_once_expired(connect_as, made, reads):
    """Issue 29: reads take a step-up of the last eight hours (0042); commands a fresh one."""
    member = await _staff_member(connect_as)
    session, challenge = uuid.uuid4(), uuid.uuid4()
    async with connect_as("staff_service") as conn:
        await conn.execute(
            "SELECT identity.add_staff_session(%s, %s, %s, now() - interval '10 hours',"
            " now() + interval '1 hour')",
            (session, member, SESSION_DIGEST),
        )
        await conn.execute(CONSUMED_STEP_UP, (challenge, member, CODE_HASH))
        await conn.execute(
            "SELECT identity.elevate_staff_session(%s, %s, %s, %s, %s,"
            " now() - %s::interval, now() - %s::interval + interval '5 minutes')",
            (uuid.uuid4(), session, member, challenge, ELEVATION_DIGEST, made, made),
        )
        read = "SELECT * FROM outbox.staff_backlog(%s, %s)"
        if reads:
            await conn.execute(read, (member, ELEVATION_DIGEST))
        else:
            with pytest.raises(errors.InsufficientPrivilege, match="fresh step-up required"):
                await conn.execute(read, (member, ELEVATION_DIGEST))
        with pytest.raises(errors.InsufficientPrivilege, match="fresh step-up required"):
            await conn.execute(PAUSE, (member, ELEVATION_DIGEST))

    assert not await _paused(connect_as)
