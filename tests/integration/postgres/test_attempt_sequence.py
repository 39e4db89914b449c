"""A message's attempt history is in sequence (issue 28, read from the code).

``outbox.attempts`` accepted any attempt number, while both attempt tables of the events
outbox refuse one out of sequence: a row could claim attempt 3 of a message tried once, or
count attempt 1 twice. Now each row must be the attempt after the message's last counted one
(an uncounted row, a release or a suspension, names the attempt it did not spend).
"""

from __future__ import annotations

import uuid

import pytest
from psycopg import errors

pytestmark = pytest.mark.integration

ENQUEUE = (
    "SELECT outbox.enqueue_message(%s, 'notification', 'email', 'a@example.com', NULL,"
    " 'notification', '{}'::jsonb, 'en', NULL, NULL)"
)
ATTEMPT = (
    "INSERT INTO outbox.attempts (message_id, attempt, counted, outcome, failure_class,"
    " recorded_at, retry_at) VALUES (%s, %s, %s, %s, %s, now(),"
    " CASE WHEN %s IN ('retry', 'release') THEN now() END)"
)


async def _attempt(
    conn, message: uuid.UUID, attempt: int, *, counted: bool = True, outcome: str = "retry"
) -> None:
    failure = None if outcome == "published" else "UNAVAILABLE"
    await conn.execute(ATTEMPT, (message, attempt, counted, outcome, failure, outcome))


@pytest.mark.parametrize(
    "history",
    [
        [(2, True)],  # attempt 2 of a message never tried
        [(1, True), (1, True)],  # attempt 1 counted twice
        [(1, True), (3, True)],  # a gap
        [(1, True), (1, False)],  # a release naming an attempt already spent
    ],
    ids=["skipped-first", "counted-twice", "a-gap", "a-spent-number"],
)
async def test_an_attempt_out_of_sequence_is_refused(connect_as, history):
    message = uuid.uuid4()
    async with connect_as("identity_service") as conn:
        await conn.execute(ENQUEUE, (message,))

    async with connect_as() as conn:
        *before, (last, counted) = history
        for attempt, was_counted in before:
            await _attempt(conn, message, attempt, counted=was_counted)
        with pytest.raises(errors.IntegrityConstraintViolation, match="expected attempt"):
            await _attempt(conn, message, last, counted=counted)


async def test_a_history_in_sequence_is_kept(connect_as):
    message = uuid.uuid4()
    async with connect_as("identity_service") as conn:
        await conn.execute(ENQUEUE, (message,))

    async with connect_as() as conn:
        await _attempt(conn, message, 1, counted=False, outcome="release")
        await _attempt(conn, message, 1)
        await _attempt(conn, message, 2, counted=False, outcome="release")
        await _attempt(conn, message, 2, outcome="published")
        cursor = await conn.execute(
            "SELECT attempt, counted FROM outbox.attempts WHERE message_id = %s ORDER BY id",
            (message,),
        )
        assert [(1, False), (1, True), (2, False), (2, True)] == await cursor.fetchall()
