"""Who may withdraw live messages by subject: the identity module, and only its own secrets.

The attack (issue 28, finding 3): a service holding only ``outbox_producer`` learns an
identity id (every ``identity.*`` event carries one, on the stream too) and withdraws the
"your password was reset" notice queued for that identity, which is then never sent.
"""

from __future__ import annotations

import uuid

import pytest
from psycopg import errors

from outbox.domain.purposes import Purpose
from tests.contract.operator_harness import ENVELOPE

pytestmark = pytest.mark.integration

ENQUEUE = (
    "SELECT outbox.enqueue_message(%s, %s, 'email', 'victim@example.com', %s, %s,"
    " '{}'::jsonb, 'en', %s, now() + interval '10 minutes')"
)
STATE = "SELECT state, dead_letter_reason FROM outbox.messages WHERE id = %s"


async def _enqueue(connect_as, purpose: str, subject: uuid.UUID, secret: str | None) -> uuid.UUID:
    message_id = uuid.uuid4()
    async with connect_as("identity_service") as conn:
        await conn.execute(ENQUEUE, (message_id, purpose, subject, purpose, secret))
    return message_id


async def _state(connect_as, message_id: uuid.UUID) -> tuple[str, str | None]:
    async with connect_as() as conn:
        cursor = await conn.execute(STATE, (message_id,))
        row = await cursor.fetchone()
    assert row is not None
    return row[0], row[1]


@pytest.mark.parametrize("role", ["outbox_producer", "outbox_runtime", "notifications_producer"])
async def test_a_producer_cannot_withdraw_a_security_notice_by_its_subject(connect_as, role):
    victim = uuid.uuid4()
    notice = await _enqueue(connect_as, "security_notice", victim, None)

    async with connect_as(role) as conn:
        with pytest.raises(errors.InsufficientPrivilege):
            await conn.execute(
                "SELECT outbox.cancel_by_subject(%s, 'challenge_consumed')", (victim,)
            )

    assert ("pending", None) == await _state(connect_as, notice)


async def test_the_identity_module_withdraws_its_secrets_but_never_a_notice(connect_as):
    person = uuid.uuid4()
    messages = {
        purpose: await _enqueue(
            connect_as, purpose.value, person, ENVELOPE if purpose.carries_secret else None
        )
        for purpose in Purpose
    }

    async with connect_as("identity_service") as conn:
        await conn.execute("SELECT outbox.cancel_by_subject(%s, 'challenge_consumed')", (person,))

    withdrawn = {
        purpose
        for purpose, message_id in messages.items()
        if (await _state(connect_as, message_id))[0] == "dead_lettered"
    }
    assert {purpose for purpose in Purpose if purpose.carries_secret} == withdrawn
    assert Purpose.SECURITY_NOTICE not in withdrawn
