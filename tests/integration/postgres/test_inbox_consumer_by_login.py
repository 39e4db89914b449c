"""An inbox consumer's name belongs to the login that first used it (issue 28, low finding).

The attack: the inbox took the consumer name on trust, so one service (a login holding
``inbox_consumer``) marked another's events received, which then skipped them, and read its
dead-lettered payloads. Now the first login to use a name owns it; another login is refused
(42501) on every inbox function, while the database operator (a member of ``outbox_owner``)
may read and repair any consumer.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import psycopg
import pytest
from psycopg import sql

pytestmark = pytest.mark.integration

RECORD = "SELECT inbox.record_receipt(%s, %s, %s)"
DEAD = (
    "SELECT inbox.record_dead_letter(%s, %s, 'events.acme.sales.order_placed', '{}'::jsonb,"
    " 'card 4111'::bytea, 5, 'ValueError')"
)
CALLS = [
    (RECORD, lambda: ("billing", uuid.uuid4(), 7)),
    (DEAD, lambda: ("billing", uuid.uuid4())),
    ("SELECT * FROM inbox.list_received(%s, 10)", lambda: ("billing",)),
    ("SELECT * FROM inbox.list_dead_letters(%s, 10)", lambda: ("billing",)),
    ("SELECT inbox.request_replay(%s, %s)", lambda: ("billing", uuid.uuid4())),
    ("SELECT * FROM inbox.take_replay(%s)", lambda: ("billing",)),
]


@pytest.fixture
def service_login(database_url: str) -> Iterator[Callable[[], str]]:
    """A throw-away login granted inbox_consumer, as a service would have; its URL."""
    made: list[str] = []

    def make() -> str:
        name = f"test_service_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN IN ROLE inbox_consumer").format(sql.Identifier(name))
            )
        made.append(name)
        return psycopg.conninfo.make_conninfo(database_url, user=name)

    yield make
    with psycopg.connect(database_url, autocommit=True) as conn:
        for name in made:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


@pytest.mark.parametrize(
    ("statement", "params"),
    CALLS,
    ids=[
        "record_receipt",
        "record_dead_letter",
        "list_received",
        "list_dead_letters",
        "request_replay",
        "take_replay",
    ],
)
async def test_another_service_cannot_use_a_consumer_name_it_does_not_own(
    service_login, statement, params
):
    billing, intruder = service_login(), service_login()
    event = uuid.uuid4()
    async with await psycopg.AsyncConnection.connect(billing, autocommit=True) as conn:
        await conn.execute(RECORD, ("billing", event, 1))

    async with await psycopg.AsyncConnection.connect(intruder, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="billing"):
            await conn.execute(statement.encode(), params())


async def test_the_owner_keeps_working_and_the_operator_may_read_and_repair(
    service_login, database_url
):
    billing = service_login()
    dead = uuid.uuid4()
    async with await psycopg.AsyncConnection.connect(billing, autocommit=True) as conn:
        for statement, params in CALLS:
            await conn.execute(statement.encode(), params())
        await conn.execute(DEAD, ("billing", dead))

    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        cursor = await conn.execute("SELECT inbox.request_replay('billing', %s)", (dead,))
        assert (True,) == await cursor.fetchone()
        cursor = await conn.execute("SELECT owner_login FROM inbox.consumers")
        assert [(psycopg.conninfo.conninfo_to_dict(billing)["user"],)] == await cursor.fetchall()
