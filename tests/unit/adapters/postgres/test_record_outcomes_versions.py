"""0300 replaces 0003's record_outcomes; the two bodies may differ only by the lease token.

An edit to record_outcomes in 0003 would be silently undone by 0300 on every database, so
this fails until the same edit is made in 0300 (where the function now lives).
"""

from __future__ import annotations

import re

from adapters.postgres.migrations import MIGRATIONS_DIR

ORIGINAL = MIGRATIONS_DIR / "0003_queue_functions.sql"
REPLACEMENT = MIGRATIONS_DIR / "0300_attempt_lease_tokens.sql"
# What 0300 adds to 0003's body, as (0003's text, 0300's text).
TOKEN_EDITS = (
    (
        "CREATE FUNCTION outbox.record_outcomes(",
        "CREATE OR REPLACE FUNCTION outbox.record_outcomes(",
    ),
    ("i.provider_message_id, i.retry_at\n", "i.provider_message_id, i.retry_at, i.lease_token\n"),
    (
        "provider_message_id, recorded_at, retry_at\n",
        "provider_message_id, recorded_at, retry_at, lease_token\n",
    ),
    ("v_now, r.retry_at\n", "v_now, r.retry_at,\n r.lease_token\n"),
)


def _record_outcomes(path) -> str:
    text = path.read_text(encoding="utf-8")
    match = re.search(
        r"(CREATE (?:OR REPLACE )?FUNCTION outbox\.record_outcomes\(.*?\n\$\$;)", text, re.DOTALL
    )
    assert match is not None, f"{path.name} defines no outbox.record_outcomes"
    return re.sub(r"[ \t]+", " ", match.group(1))


def test_0300_is_0003s_record_outcomes_plus_the_lease_token():
    original = _record_outcomes(ORIGINAL)
    for before, after in TOKEN_EDITS:
        assert before in original, f"0003 no longer has {before!r}: update 0300 and this test"
        original = original.replace(before, after)
    assert original == _record_outcomes(REPLACEMENT)
