"""The test-database fixtures: every test starts from the migrated state, whatever the last did."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from tests import postgres_server
from tests.postgres_server import Reusable

pytestmark = pytest.mark.integration

SEEDED = "SELECT md5(string_agg(checksum, ',' ORDER BY version)) FROM outbox_meta.migrations"
MIGRATIONS = "SELECT count(*) FROM outbox_meta.migrations"
MESSAGES = "SELECT count(*) FROM outbox.messages"
INSERT_MESSAGES = """
INSERT INTO outbox.messages (id, purpose, channel, destination, template, available_at, created_at)
SELECT gen_random_uuid(), 'notification', 'email', 'a@example.com', 'welcome', now(), now()
FROM generate_series(1, 3)
"""


@pytest.fixture
def reusable(
    postgres_server: postgres_server.TestServer, migrated_template: str
) -> Iterator[Reusable]:
    """A working copy of its own, apart from the one the other tests use."""
    created = Reusable.create(postgres_server, migrated_template)
    try:
        yield created
    finally:
        created.drop()


def _one(url: str, query: str) -> object:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(query).fetchone()
    assert row is not None
    return row[0]


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


def test_a_reset_removes_the_rows_a_test_left_and_keeps_the_seeded_ones(reusable):
    seeded, migrations = _one(reusable.url, SEEDED), _one(reusable.url, MIGRATIONS)
    with psycopg.connect(reusable.url, autocommit=True) as conn:
        conn.execute(INSERT_MESSAGES)
        conn.execute("UPDATE outbox_meta.migrations SET checksum = 'changed'")
    name = reusable.name

    reusable.reset()

    assert (name, 0, seeded, migrations) == (
        reusable.name,
        _one(reusable.url, MESSAGES),
        _one(reusable.url, SEEDED),
        _one(reusable.url, MIGRATIONS),
    )
    assert 0 < int(str(migrations))


def test_a_reset_empties_a_table_left_with_thousands_of_rows(reusable):
    with psycopg.connect(reusable.url, autocommit=True) as conn:
        conn.execute(INSERT_MESSAGES.replace("generate_series(1, 3)", "generate_series(1, 1500)"))

    reusable.reset()

    assert (1, 0) == (reusable.copies, _one(reusable.url, MESSAGES))


def test_a_reset_puts_every_sequence_back(reusable):
    before = _one(reusable.url, "SELECT last_value FROM outbox.attempts_id_seq")
    with psycopg.connect(reusable.url, autocommit=True) as conn:
        conn.execute("SELECT nextval('outbox.attempts_id_seq') FROM generate_series(1, 5)")

    reusable.reset()

    assert before == _one(reusable.url, "SELECT last_value FROM outbox.attempts_id_seq")


def test_a_test_that_changed_a_function_gets_a_new_copy_for_the_next(reusable):
    with psycopg.connect(reusable.url, autocommit=True) as conn:
        conn.execute("ALTER FUNCTION outbox.claim_messages SECURITY INVOKER")
    name = reusable.name

    reusable.reset()

    assert name != reusable.name
    assert 2 == reusable.copies
    assert _one(
        reusable.url,
        "SELECT bool_and(prosecdef) FROM pg_proc WHERE proname = 'claim_messages'",
    )


def test_a_connection_left_holding_a_lock_does_not_keep_its_rows(reusable):
    with psycopg.connect(reusable.url, autocommit=True) as conn:
        conn.execute(INSERT_MESSAGES)
    stray = psycopg.connect(reusable.url)
    try:
        stray.execute("SELECT id FROM outbox.messages FOR UPDATE")

        reusable.reset()

        with pytest.raises(psycopg.OperationalError):
            stray.execute("SELECT 1")
    finally:
        stray.close()
    assert 2 == reusable.copies
    assert 0 == _one(reusable.url, MESSAGES)
