"""The plain-SQL producer example in docs/sql-api.md runs as written, as outbox_producer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

DOC = Path(__file__).parents[3] / "docs" / "sql-api.md"


def _example() -> str:
    text = DOC.read_text(encoding="utf-8")
    match = re.search(r"<!-- example: producer-sql .*?-->\n```sql\n(.*?)```", text, re.DOTALL)
    assert match is not None, "the producer example block is missing from docs/sql-api.md"
    return match.group(1)


async def test_the_documented_producer_example_enqueues_a_message(connect_as):
    async with connect_as("outbox_producer") as conn:
        await conn.execute(_example().encode())
    async with connect_as() as conn:
        cursor = await conn.execute(
            "SELECT m.state, m.purpose, e.sealed IS NOT NULL FROM outbox.messages m"
            " JOIN outbox.envelopes e ON e.message_id = m.id"
            " WHERE m.id = '0190f5c2-7a1b-7c3d-8e4f-000000000001'"
        )
        assert ("pending", "sign_up", True) == await cursor.fetchone()
