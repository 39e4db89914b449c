"""The security outbox's worker statements as the SQL tests call them, by role."""

from __future__ import annotations

from collections.abc import Sequence

from tests.postgres_fixtures import ConnectAs

# A sealed secret of the envelope's shape (the database checks only the shape).
ENVELOPE = "v1.test-key.c2FsdHNhbHQ.bm9uY2Vub25jZQ.Y2lwaGVydGV4dA"
CLAIM = "SELECT id, lease_token, attempt_count FROM outbox.claim_messages('w', %s, 300)"
# One message of a kind, by the producer's call: a notification, a security notice (high
# priority by purpose), the same notice at the producer's low priority, a sign-up code.
ENQUEUE = """
SELECT outbox.enqueue_message(
    p_id => gen_random_uuid(), p_purpose => %(purpose)s, p_channel => 'email',
    p_destination => 'person@example.com', p_template => %(purpose)s,
    p_subject_id => CASE WHEN %(purpose)s = 'notification' THEN NULL ELSE gen_random_uuid() END,
    p_sealed_secret => %(sealed)s, p_priority => %(priority)s
)
"""
NOTIFICATION = {"purpose": "notification", "sealed": None, "priority": None}
NOTICE = {"purpose": "security_notice", "sealed": None, "priority": None}
LOW_NOTICE = {"purpose": "security_notice", "sealed": None, "priority": 0}
CODE = {"purpose": "sign_up", "sealed": ENVELOPE, "priority": None}
RECORD = """
SELECT result FROM outbox.record_outcomes_detailed(
    %s::uuid[], %s::uuid[], %s::integer[], %s::text[], %s::text[], %s::text[], %s::text[],
    %s::text[], %s::timestamptz[], %s::boolean[], %s::text[]
)
"""


def published(claimed: Sequence[tuple[object, ...]]) -> tuple[object, ...]:
    """RECORD's parameters: every row of CLAIM published through the console provider."""
    n = len(claimed)
    return (
        [row[0] for row in claimed],
        [row[1] for row in claimed],
        [int(str(row[2])) + 1 for row in claimed],
        ["published"] * n,
        [None] * n,
        [""] * n,
        ["console"] * n,
        [""] * n,
        [None] * n,
        [True] * n,
        [""] * n,
    )


async def enqueue_as_producer(connect_as: ConnectAs, *messages: dict[str, object]) -> None:
    """Enqueue ``messages`` (ENQUEUE's kinds) in order, one transaction each, as the producer."""
    async with connect_as("outbox_producer") as conn:
        for message in messages:
            await conn.execute(ENQUEUE, message)
