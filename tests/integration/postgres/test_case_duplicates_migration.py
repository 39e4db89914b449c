"""0011 on a database written before addresses were lower-cased: every mailbox ends with one
spelling, duplicates are moved aside rather than deleted, and no other spelling fits again."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg import errors

from outbox.adapters.postgres.migrator import apply_migrations, load_migrations

pytestmark = pytest.mark.integration

CASE_MIGRATION = 11
HASH = "$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaA"
IDS = {name: f"01900000-0000-7000-8000-0000000000{n:02d}" for n, name in enumerate("ABCDEFGH")}

# Written as the first milestone could: the local part kept as typed.
LEGACY_ROWS = f"""
INSERT INTO identity.identities (id, created_at) SELECT id::uuid, now() - interval '9 days'
FROM unnest(ARRAY['{IDS["A"]}', '{IDS["B"]}', '{IDS["C"]}', '{IDS["D"]}', '{IDS["E"]}']) AS id;
INSERT INTO identity.login_identifiers (value, channel, identity_id, created_at, verified_at)
VALUES
    ('Alice@example.com', 'email', '{IDS["A"]}', now() - interval '9 days',
     now() - interval '8 days'),
    ('alice@example.com', 'email', '{IDS["B"]}', now() - interval '1 day', NULL),
    ('ALICE@example.com', 'email', '{IDS["C"]}', now() - interval '9 days',
     now() - interval '2 days'),
    ('Bob@example.com', 'email', '{IDS["D"]}', now() - interval '9 days', now()),
    ('+34612345678', 'sms', '{IDS["E"]}', now() - interval '9 days', now());
INSERT INTO identity.password_credentials (identity_id, password_hash, updated_at)
VALUES ('{IDS["C"]}', '{HASH}', now());
INSERT INTO identity.challenges (
    id, purpose, identity_id, identifier, channel, code_hash, created_at, expires_at
) VALUES (
    '{IDS["F"]}', 'password_recovery', '{IDS["D"]}', 'Bob@example.com', 'email', '{HASH}',
    now(), now() + interval '10 minutes'
);
INSERT INTO identity.organizations (id, name, created_by, created_at)
VALUES ('{IDS["G"]}', 'Acme', '{IDS["A"]}', now());
INSERT INTO identity.invitations (
    id, organization_id, email, token_digest, invited_by, state, created_at, expires_at,
    ended_at, accepted_by
) VALUES
    ('{IDS["H"]}', '{IDS["G"]}', 'Guest@example.com', repeat('a', 64), '{IDS["A"]}', 'pending',
     now() - interval '2 hours', now() + interval '7 days', NULL, NULL),
    ('01900000-0000-7000-8000-000000000099', '{IDS["G"]}', 'guest@example.com', repeat('b', 64),
     '{IDS["A"]}', 'pending', now() - interval '1 hour', now() + interval '7 days', NULL, NULL),
    ('01900000-0000-7000-8000-000000000098', '{IDS["G"]}', 'Carol@example.com', repeat('c', 64),
     '{IDS["A"]}', 'accepted', now() - interval '3 hours', now() + interval '7 days', now(),
     '{IDS["B"]}');
SELECT outbox.enqueue_message(
    p_id => '01900000-0000-7000-8000-000000000097', p_purpose => 'invitation',
    p_channel => 'email', p_destination => 'Guest@example.com', p_subject_id => '{IDS["H"]}',
    p_template => 'invitation', p_sealed_secret => 'v1.test.c2VhbGVk.c2VhbGVk',
    p_expires_at => now() + interval '7 days'
);
"""


async def _rows(url: str, query: str) -> list[tuple[Any, ...]]:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cursor = await conn.execute(query.encode())
        return await cursor.fetchall()


@pytest.fixture
async def upgraded(empty_database_url: str) -> str:
    """A database migrated to just before 0011, given legacy rows, then migrated to the end."""
    before = [m for m in load_migrations() if m.version < CASE_MIGRATION]
    await apply_migrations(empty_database_url, before)
    async with await psycopg.AsyncConnection.connect(empty_database_url, autocommit=True) as c:
        await c.execute(LEGACY_ROWS.encode())
    await apply_migrations(empty_database_url)
    return empty_database_url


async def test_one_spelling_per_mailbox_keeps_the_first_verified_account(upgraded: str) -> None:
    logins = await _rows(
        upgraded, "SELECT value, identity_id::text FROM identity.login_identifiers ORDER BY value"
    )
    moved = await _rows(
        upgraded,
        "SELECT value, identity_id::text, kept_identity_id::text"
        " FROM identity.case_duplicate_identifiers ORDER BY value",
    )

    assert [
        ("+34612345678", IDS["E"]),
        ("alice@example.com", IDS["A"]),
        ("bob@example.com", IDS["D"]),
    ] == logins
    assert [
        ("ALICE@example.com", IDS["C"], IDS["A"]),
        ("alice@example.com", IDS["B"], IDS["A"]),
    ] == moved
    # Nothing of the moved accounts is deleted.
    assert [(5,)] == await _rows(upgraded, "SELECT count(*) FROM identity.identities")
    assert [(1,)] == await _rows(upgraded, "SELECT count(*) FROM identity.password_credentials")


async def test_old_spellings_close_their_challenges_and_fold_their_invitations(
    upgraded: str,
) -> None:
    challenges = await _rows(upgraded, "SELECT state FROM identity.challenges")
    invitations = await _rows(
        upgraded, "SELECT id::text, email, state FROM identity.invitations ORDER BY created_at"
    )
    messages = await _rows(upgraded, "SELECT state, dead_letter_reason FROM outbox.messages")

    assert [("closed",)] == challenges
    assert [
        ("01900000-0000-7000-8000-000000000098", "carol@example.com", "accepted"),
        (IDS["H"], "guest@example.com", "revoked"),
        ("01900000-0000-7000-8000-000000000099", "guest@example.com", "pending"),
    ] == invitations
    assert [("dead_lettered", "invitation_revoked")] == messages


async def test_no_other_spelling_can_be_stored_again(upgraded: str) -> None:
    async with await psycopg.AsyncConnection.connect(upgraded, autocommit=True) as conn:
        with pytest.raises(errors.CheckViolation) as login:
            await conn.execute(
                "UPDATE identity.login_identifiers SET value = 'Bob@example.com'"
                " WHERE value = 'bob@example.com'"
            )
        with pytest.raises(errors.CheckViolation) as invitation:
            await conn.execute(
                "UPDATE identity.invitations SET email = 'Carol@example.com'"
                " WHERE email = 'carol@example.com'"
            )

    assert "login_identifiers_email_lower_case" == login.value.diag.constraint_name
    assert "invitations_email_lower_case" == invitation.value.diag.constraint_name
