"""The notifications catalogue's SQL (0027, 0028), called as the roles themselves: who may call
what (42501 for the rest), snapshots frozen even for their owner, no secret among the
variables, and the catalogue's rows the same as the code's."""

from __future__ import annotations

import asyncio
from uuid import UUID, uuid4

import psycopg
import pytest
from psycopg.types.json import Jsonb

from outbox.domain.notifications.catalogue import CATALOGUE

pytestmark = pytest.mark.integration

NOTIFIER = "notifications_producer"
OTHERS = ["outbox_producer", "outbox_worker", "outbox_runtime", "events_consumer"]
TAKE = (
    "SELECT * FROM notifications.take_snapshot(%s, %s, 'account.welcome', %s, 'staff', %s,"
    " %s, %s, %s, 'account_welcome', 'es', %s)"
)
# The recipient every snapshot here is for: it exists and alice@example.com is its verified
# address (take_snapshot refuses any other, 0038).
ALICE = UUID("018f0000-0000-7000-8000-00000000a11c")
CALLS = [
    (
        TAKE,
        lambda: (
            uuid4(),
            f"k:{uuid4()}",
            ALICE,
            uuid4(),
            "email",
            "alice@example.com",
            "a***@example.com",
            Jsonb({}),
        ),
    ),
    ("SELECT notifications.opt_out(%s, 'account.welcome', NULL)", lambda: (uuid4(),)),
    ("SELECT notifications.opt_in(%s, 'account.welcome', NULL)", lambda: (uuid4(),)),
    ("SELECT * FROM notifications.opt_outs(%s)", lambda: (uuid4(),)),
    ("SELECT * FROM notifications.intent_snapshots(%s)", lambda: (uuid4(),)),
]


@pytest.fixture(autouse=True)
async def alice(connect_as) -> UUID:
    """The recipient, with alice@example.com verified."""
    async with connect_as() as conn:
        await conn.execute(
            "INSERT INTO identity.identities (id, created_at) VALUES (%s, now())", (ALICE,)
        )
        await conn.execute(
            "INSERT INTO identity.login_identifiers (value, channel, identity_id, created_at,"
            " verified_at) VALUES ('alice@example.com', 'email', %s, now(), now())",
            (ALICE,),
        )
    return ALICE


async def _take(conn: psycopg.AsyncConnection, **changes: object) -> tuple[object, ...]:
    values: dict[str, object] = {
        "intent_id": uuid4(),
        "key": "identity.account_verified:1",
        "recipient": ALICE,
        "snapshot": uuid4(),
        "channel": "email",
        "destination": "alice@example.com",
        "masked": "a***@example.com",
        "variables": Jsonb({"first_name": "Alice"}),
    }
    values.update(changes)
    cursor = await conn.execute(TAKE, tuple(values.values()))
    row = await cursor.fetchone()
    assert row is not None
    return tuple(row)


async def test_no_other_job_role_may_call_the_notifications_functions(connect_as) -> None:
    refused = []
    for role in OTHERS:
        async with connect_as(role) as conn:
            for query, params in CALLS:
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    await conn.execute(query, params())
                refused.append((role, query))
    assert len(OTHERS) * len(CALLS) == len(refused)


async def test_the_role_that_records_intents_may_call_each_one(connect_as) -> None:
    async with connect_as(NOTIFIER) as conn:
        for query, params in CALLS:
            await conn.execute(query, params())


async def test_identity_service_is_a_member_and_records_through_the_function_only(
    connect_as,
) -> None:
    async with connect_as("identity_service") as conn:
        snapshot, intent, decision, created = await _take(conn)
        assert ("send", True) == (decision, created)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            await conn.execute("SELECT * FROM notifications.snapshots")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            await conn.execute(
                "INSERT INTO notifications.consent_opt_outs VALUES (%s, 'account.welcome', 'sms')",
                (uuid4(),),
            )
    async with connect_as() as conn:
        cursor = await conn.execute(
            "SELECT purpose, channel, destination, template, locale, params, subject_id"
            " FROM outbox.messages WHERE id = %s",
            (snapshot,),
        )
        assert (
            "notification",
            "email",
            "alice@example.com",
            "account_welcome",
            "es",
            {"first_name": "Alice"},
            None,
        ) == await cursor.fetchone()
        cursor = await conn.execute(
            "SELECT masked_destination FROM notifications.snapshots WHERE intent_id = %s",
            (intent,),
        )
        assert ("a***@example.com",) == await cursor.fetchone()


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE notifications.snapshots SET locale = 'en'",
        "UPDATE notifications.snapshots SET decision = 'suppressed_by_consent'",
        "UPDATE notifications.intents SET category_code = category_code",
    ],
)
async def test_snapshots_and_intents_are_frozen_even_for_their_owner(
    connect_as, statement: str
) -> None:
    async with connect_as(NOTIFIER) as conn:
        await _take(conn)
    async with connect_as("outbox_owner") as conn:
        with pytest.raises(psycopg.errors.IntegrityConstraintViolation, match="frozen"):
            await conn.execute(statement)


async def test_an_opt_out_made_before_the_snapshot_suppresses_it_and_none_after_changes_it(
    connect_as,
) -> None:
    recipient = ALICE
    async with connect_as(NOTIFIER) as conn:
        await conn.execute(
            "SELECT notifications.opt_out(%s, 'account.welcome', ARRAY['email'])", (recipient,)
        )
        snapshot, intent, decision, created = await _take(conn, recipient=recipient)
        await conn.execute("SELECT notifications.opt_in(%s, 'account.welcome', NULL)", (recipient,))
        again = await _take(conn, recipient=recipient, snapshot=uuid4())
        cursor = await conn.execute(
            "SELECT decision, message_state FROM notifications.intent_snapshots(%s)", (intent,)
        )
        rows = await cursor.fetchall()
    assert ("suppressed_by_consent", True) == (decision, created)
    assert (snapshot, intent, "suppressed_by_consent", False) == again
    assert [("suppressed_by_consent", None)] == rows
    async with connect_as() as conn:
        cursor = await conn.execute(
            "SELECT count(*) FROM outbox.messages WHERE id = %s", (snapshot,)
        )
        assert (0,) == await cursor.fetchone()


@pytest.mark.parametrize("name", ["code", "link", "token", "password", "secret"])
async def test_a_snapshot_never_stores_a_secret_variable(connect_as, name: str) -> None:
    """The category's allow-list refuses it first (0038); the table's check stays behind it."""
    async with connect_as(NOTIFIER) as conn:
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="p_variables"):
            await _take(conn, variables=Jsonb({name: "123456"}))
    async with connect_as() as conn:
        await conn.execute(
            "UPDATE notifications.categories SET variables = ARRAY[%s]"
            " WHERE code = 'account.welcome'",
            (name,),
        )
        with pytest.raises(psycopg.errors.CheckViolation, match="no_secret"):
            await _take(conn, variables=Jsonb({name: "123456"}))


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"channel": "whatsapp"}, "p_channel"),
        ({"masked": "alice@example.com"}, "p_masked_destination"),
        ({"destination": "bob@example.com", "masked": "b***@example.com"}, "p_destination"),
        ({"key": "has space"}, "intents_key_shape"),
    ],
)
async def test_bad_arguments_are_refused_naming_them(
    connect_as, changes: dict[str, object], field: str
) -> None:
    async with connect_as(NOTIFIER) as conn:
        with pytest.raises(psycopg.Error, match=field):
            await _take(conn, **changes)


async def test_an_unknown_category_is_refused(connect_as) -> None:
    async with connect_as(NOTIFIER) as conn:
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="p_category"):
            await conn.execute("SELECT notifications.opt_out(%s, 'shop.nothing', NULL)", (uuid4(),))
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="p_channels"):
            await conn.execute(
                "SELECT notifications.opt_out(%s, 'account.welcome', ARRAY['whatsapp'])", (uuid4(),)
            )


async def test_the_catalogue_rows_are_the_code_s(connect_as) -> None:
    async with connect_as() as conn:
        cursor = await conn.execute(
            "SELECT code, channels, template, variables FROM notifications.categories"
        )
        rows = {
            code: (tuple(channels), template, frozenset(variables))
            for code, channels, template, variables in await cursor.fetchall()
        }
    assert {
        c.code: (tuple(ch.value for ch in c.channels), c.template, c.variables) for c in CATALOGUE
    } == rows


async def test_the_preferred_locale_is_the_api_role_s_and_checked(connect_as) -> None:
    identity_id = uuid4()
    async with connect_as("identity_service") as conn:
        await conn.execute("SELECT identity.add_identity(%s, now())", (identity_id,))
        cursor = await conn.execute(
            "SELECT identity.set_preferred_locale(%s, 'es')", (identity_id,)
        )
        assert (True,) == await cursor.fetchone()
        cursor = await conn.execute("SELECT identity.set_preferred_locale(%s, 'es')", (uuid4(),))
        assert (False,) == await cursor.fetchone()
        cursor = await conn.execute("SELECT identity.preferred_locale(%s)", (identity_id,))
        assert ("es",) == await cursor.fetchone()
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="p_locale"):
            await conn.execute("SELECT identity.set_preferred_locale(%s, '../x')", (identity_id,))
    for role in [*OTHERS, NOTIFIER]:
        async with connect_as(role) as conn:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                await conn.execute("SELECT identity.preferred_locale(%s)", (identity_id,))


async def test_the_identity_module_s_notifications_consumer_takes_account_verified(
    connect_as,
) -> None:
    async with connect_as() as conn:
        cursor = await conn.execute(
            "SELECT c.code, c.owner_module_code, s.event_type_code, s.min_version, s.max_version"
            " FROM events.consumers AS c JOIN events.consumer_subscriptions AS s"
            " ON s.consumer_id = c.id WHERE c.code = 'identity.account_notifications'"
        )
        assert [
            ("identity.account_notifications", "identity", "identity.account_verified", 1, 1)
        ] == await cursor.fetchall()


async def test_two_requests_at_once_take_one_snapshot_and_enqueue_one_message(
    connect_as,
) -> None:
    """The second waits on the first's intent, then answers its snapshot."""
    recipient, key = ALICE, "identity.account_verified:race"
    async with (
        connect_as(NOTIFIER, autocommit=False) as first,
        connect_as(NOTIFIER, autocommit=False) as second,
    ):
        won = await _take(first, recipient=recipient, key=key)
        waiting = asyncio.create_task(_take(second, recipient=recipient, key=key))
        await asyncio.sleep(0.5)
        assert not waiting.done()  # blocked on the first's uncommitted intent
        await first.commit()
        lost = await waiting
        await second.commit()
    assert won[3] is True
    assert (won[0], won[1], won[2], False) == lost
    async with connect_as() as conn:
        cursor = await conn.execute(
            "SELECT count(*) FROM outbox.messages WHERE purpose = 'notification'"
        )
        assert (1,) == await cursor.fetchone()
