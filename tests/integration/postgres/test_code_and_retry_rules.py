"""Two rules the database keeps whatever role asks: a challenge's code changes only
by a resend or a reissue, and a retry time is in the future."""

from __future__ import annotations

import uuid

import pytest
from psycopg import errors

pytestmark = pytest.mark.integration

ROLE = "identity_service"
OLD_HASH = "$argon2id$v=19$m=8,t=1,p=1$b2xkc2FsdA$b2xkLWhhc2g"
NEW_HASH = "$argon2id$v=19$m=8,t=1,p=1$bmV3c2FsdA$bmV3LWhhc2g"
ENVELOPE = "v1.test-key.bmV3c2FsdA.bmV3bm9uY2U.bmV3Y2lwaGVy"
SAVE = (
    "SELECT identity.save_challenge(%s, 'password_recovery', %s, 'victim@example.com', 'email',"
    " %s, 0, %s, now() - interval '1 minute', now() + interval '9 minutes',"
    " CASE WHEN %s <> 'open' THEN now() END)"
)
ENQUEUE = (
    "SELECT outbox.enqueue_message(gen_random_uuid(), 'password_recovery', 'email',"
    " %s, %s, 'password_recovery', '{}', 'en', %s, now() + interval '9 minutes')"
)


async def _challenge(connect_as, state: str = "open") -> tuple[uuid.UUID, uuid.UUID]:
    """(identity, challenge) of the victim's recovery, with the code the victim was sent."""
    identity, challenge = uuid.uuid4(), uuid.uuid4()
    async with connect_as() as conn:
        await conn.execute("SELECT identity.add_identity(%s, now())", (identity,))
        await conn.execute(SAVE, (challenge, identity, OLD_HASH, state, state))
    return identity, challenge


async def _code_hash(connect_as, challenge: uuid.UUID) -> str:
    async with connect_as() as conn:
        cursor = await conn.execute(
            "SELECT code_hash FROM identity.challenges WHERE id = %s", (challenge,)
        )
        [(code_hash,)] = await cursor.fetchall()
    return str(code_hash)


async def test_a_code_set_without_sending_it_is_refused(connect_as):
    """The attack: put a code of one's choosing on someone's open challenge, then confirm it."""
    identity, challenge = await _challenge(connect_as)

    async with connect_as(ROLE) as conn:
        with pytest.raises(errors.IntegrityConstraintViolation) as caught:
            await conn.execute(SAVE, (challenge, identity, NEW_HASH, "open", "open"))

    assert "challenges_code_changes_are_sent" == caught.value.diag.constraint_name
    assert OLD_HASH == await _code_hash(connect_as, challenge)


async def _resend(connect_as, identity: uuid.UUID, challenge: uuid.UUID, sent_to: str) -> None:
    """A new code on the challenge and a message carrying it to ``sent_to``, one transaction."""
    async with connect_as(ROLE, autocommit=False) as conn:
        await conn.execute(SAVE, (challenge, identity, NEW_HASH, "open", "open"))
        await conn.execute(ENQUEUE, (sent_to, challenge, ENVELOPE))
        await conn.commit()


async def test_a_resend_changes_the_code_and_sends_it_in_one_transaction(connect_as):
    identity, challenge = await _challenge(connect_as)

    await _resend(connect_as, identity, challenge, "victim@example.com")

    assert NEW_HASH == await _code_hash(connect_as, challenge)


@pytest.mark.parametrize(
    ("state", "sent_to"),
    [("open", "attacker@example.com"), ("locked", "victim@example.com")],
    ids=["sent-elsewhere", "ended-challenge"],
)
async def test_a_code_sent_elsewhere_or_to_an_ended_challenge_is_refused(
    connect_as, state, sent_to
):
    identity, challenge = await _challenge(connect_as, state=state)

    with pytest.raises(errors.IntegrityConstraintViolation):
        await _resend(connect_as, identity, challenge, sent_to)

    assert OLD_HASH == await _code_hash(connect_as, challenge)


async def test_a_wrong_try_keeps_the_code_and_needs_no_message(connect_as):
    identity, challenge = await _challenge(connect_as)

    async with connect_as(ROLE) as conn:
        await conn.execute(
            "SELECT identity.save_challenge(%s, 'password_recovery', %s, 'victim@example.com',"
            " 'email', %s, 1, 'open', now(), now() + interval '9 minutes', NULL)",
            (challenge, identity, OLD_HASH),
        )

    async with connect_as() as conn:
        cursor = await conn.execute(
            "SELECT failed_attempts FROM identity.challenges WHERE id = %s", (challenge,)
        )
        assert [(1,)] == await cursor.fetchall()


# Retry times --------------------------------------------------------------------------------------

RECORD = (
    "SELECT result FROM outbox.record_outcomes(ARRAY[%s]::uuid[], ARRAY[%s]::uuid[],"
    " ARRAY[1], ARRAY[%s], ARRAY['UNAVAILABLE'], ARRAY['503'], ARRAY['test'], ARRAY[''],"
    " ARRAY[now() + %s::interval], ARRAY[true])"
)


async def _leased(connect_as) -> tuple[uuid.UUID, uuid.UUID]:
    async with connect_as() as conn:
        await conn.execute(
            "SELECT outbox.enqueue_message(gen_random_uuid(), 'notification', 'email',"
            " 'person@example.com', NULL, 'hello')"
        )
    async with connect_as("outbox_worker") as conn:
        cursor = await conn.execute("SELECT id, lease_token FROM outbox.claim_messages('w', 1, 60)")
        [(message_id, token)] = await cursor.fetchall()
    return message_id, token


@pytest.mark.parametrize("outcome", ["retry", "release"])
@pytest.mark.parametrize("delay", ["0 seconds", "-1 second", "-1 day"])
async def test_a_retry_time_not_in_the_future_is_refused(connect_as, outcome, delay):
    message_id, token = await _leased(connect_as)

    async with connect_as("outbox_worker") as conn:
        with pytest.raises(errors.InvalidParameterValue, match="retry time must be in the future"):
            await conn.execute(RECORD, (message_id, token, outcome, delay))

    async with connect_as() as conn:
        cursor = await conn.execute(
            "SELECT state, attempt_count FROM outbox.messages WHERE id = %s", (message_id,)
        )
        assert [("leased", 0)] == await cursor.fetchall()


async def test_a_retry_time_in_the_future_is_recorded(connect_as):
    message_id, token = await _leased(connect_as)

    async with connect_as("outbox_worker") as conn:
        cursor = await conn.execute(RECORD, (message_id, token, "retry", "5 seconds"))
        assert [("recorded",)] == await cursor.fetchall()
