"""The security outbox's worker statements as the SQL tests call them, by role."""

from __future__ import annotations

from collections.abc import Sequence

# A sealed secret of the envelope's shape (the database checks only the shape).
ENVELOPE = "v1.test-key.c2FsdHNhbHQ.bm9uY2Vub25jZQ.Y2lwaGVydGV4dA"
CLAIM = "SELECT id, lease_token, attempt_count FROM outbox.claim_messages('w', %s, 300)"
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
