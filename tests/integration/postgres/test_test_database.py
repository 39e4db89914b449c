"""The test-database fixtures give each test its own fresh, migrated database."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration


async def test_each_test_gets_a_migrated_database_with_no_messages(connect_as):
    async with connect_as() as conn:
        cursor = await conn.execute("SELECT count(*) FROM outbox.messages")
        assert (0,) == await cursor.fetchone()


async def test_a_test_database_is_a_copy_not_the_template(connect_as, migrated_template):
    async with connect_as() as conn:
        cursor = await conn.execute("SELECT current_database()")
        row = await cursor.fetchone()
    assert row is not None
    assert row[0] != migrated_template
    assert row[0].startswith("outbox_test_")


async def test_connect_as_acts_as_the_role(connect_as):
    async with connect_as("outbox_worker") as conn:
        cursor = await conn.execute("SELECT current_user")
        assert ("outbox_worker",) == await cursor.fetchone()
