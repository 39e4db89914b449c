"""SECURITY DEFINER functions ignore the caller's search_path: temp tables and look-alike
operators or functions in the caller's schemas cannot redirect what they touch."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

pytestmark = pytest.mark.integration

ENQUEUE = (
    "SELECT outbox.enqueue_message(%s, 'sign_up', 'email', 'person@example.com', %s, 'code',"
    " '{}', 'en', 'v1.k.c2FsdA.bm9uY2U.Y2lwaGVy', now() + interval '10 minutes')"
)
MESSAGE_COPY = "(id uuid, purpose text, subject_id uuid, state text, sealed text, message_id uuid)"


async def test_temp_tables_named_like_the_queue_do_not_capture_an_enqueue(connect_as):
    message_id, subject_id = uuid.uuid4(), uuid.uuid4()
    async with connect_as("outbox_producer") as conn:
        for name in ("messages", "envelopes", "attempts"):
            await conn.execute(f"CREATE TEMP TABLE {name} {MESSAGE_COPY}")
        await conn.execute("SET search_path = pg_temp, public")
        await conn.execute(ENQUEUE, (message_id, subject_id))
        cursor = await conn.execute(
            "SELECT (SELECT count(*) FROM pg_temp.messages) + (SELECT count(*) FROM"
            " pg_temp.envelopes) + (SELECT count(*) FROM pg_temp.attempts)"
        )
        assert (0,) == await cursor.fetchone()
    async with connect_as() as conn:
        cursor = await conn.execute(
            "SELECT m.state, e.sealed IS NOT NULL FROM outbox.messages m"
            " JOIN outbox.envelopes e ON e.message_id = m.id WHERE m.id = %s",
            (message_id,),
        )
        assert ("pending", True) == await cursor.fetchone()


async def test_look_alike_operators_and_functions_in_the_callers_path_are_never_called(
    connect_as,
):
    # A schema the caller controls, searched before pg_catalog in the caller's path: it holds
    # a uuid equality operator, a now() and a pg_notify that would record that they ran.
    async with connect_as() as conn:
        await conn.execute("CREATE SCHEMA trap")
        await conn.execute("CREATE TABLE trap.calls (what text)")
        await conn.execute("GRANT USAGE ON SCHEMA trap TO PUBLIC")
        await conn.execute("GRANT INSERT, SELECT ON trap.calls TO PUBLIC")
        await conn.execute(
            "CREATE FUNCTION trap.uuid_eq(uuid, uuid) RETURNS boolean LANGUAGE plpgsql AS"
            " $$BEGIN INSERT INTO trap.calls VALUES ('uuid ='); RETURN $1::text = $2::text;"
            " END$$"
        )
        await conn.execute(
            "CREATE OPERATOR trap.= (LEFTARG = uuid, RIGHTARG = uuid, FUNCTION = trap.uuid_eq)"
        )
        for name, returns in (
            ("statement_timestamp()", "timestamptz"),
            ("gen_random_uuid()", "uuid"),
            ("pg_notify(text, text)", "void"),
        ):
            value = {"timestamptz": "now()", "uuid": "NULL", "void": ""}[returns]
            await conn.execute(
                f"CREATE FUNCTION trap.{name} RETURNS {returns} LANGUAGE plpgsql AS"
                f" $$BEGIN INSERT INTO trap.calls VALUES ('{name}'); RETURN {value}; END$$"
            )
    subject_id = uuid.uuid4()
    async with connect_as("outbox_producer") as conn:
        await conn.execute("SET search_path = trap, pg_catalog, pg_temp")
        await conn.execute(ENQUEUE, (uuid.uuid4(), subject_id))
        await conn.execute(ENQUEUE, (uuid.uuid4(), subject_id))  # supersedes: compares uuids
    async with connect_as("identity_service") as conn:
        await conn.execute("SET search_path = trap, pg_catalog, pg_temp")
        await conn.execute(
            "SELECT outbox.cancel_by_subject(%s, 'challenge_consumed')", (subject_id,)
        )
    async with connect_as("outbox_worker") as conn:
        await conn.execute("SET search_path = trap, pg_catalog, pg_temp")
        await conn.execute("SELECT * FROM outbox.claim_messages('w', 10, 60)")
        await conn.execute("SELECT outbox.expire_messages(10)")
    async with connect_as() as conn:
        cursor = await conn.execute("SELECT what FROM trap.calls")
        assert [] == await cursor.fetchall()
        cursor = await conn.execute(
            "SELECT count(*) FILTER (WHERE dead_letter_reason = 'superseded_by_resend'),"
            " count(*) FILTER (WHERE dead_letter_reason = 'challenge_consumed')"
            " FROM outbox.messages WHERE subject_id = %s",
            (subject_id,),
        )
        assert (1, 1) == await cursor.fetchone()
        # Control: the same trap does catch a function that lacks the fixed search_path.
        await conn.execute(
            "CREATE FUNCTION public.unguarded(a uuid, b uuid) RETURNS boolean LANGUAGE plpgsql"
            " SECURITY DEFINER AS $$BEGIN RETURN a = b; END$$"
        )
        await conn.execute("SET search_path = trap, pg_catalog, pg_temp")
        await conn.execute("SELECT public.unguarded(%s, %s)", (uuid.uuid4(), uuid.uuid4()))
        cursor = await conn.execute("SELECT what FROM trap.calls")
        assert [("uuid =",)] == await cursor.fetchall()


async def test_a_claim_through_a_hostile_path_still_leases_real_rows(connect_as, dispatch_store):
    async with connect_as("outbox_producer") as conn:
        await conn.execute(ENQUEUE, (uuid.uuid4(), uuid.uuid4()))
    async with connect_as("outbox_worker") as conn:
        await conn.execute("CREATE TEMP TABLE messages (id uuid, state text)")
        await conn.execute("SET search_path = pg_temp")
        cursor = await conn.execute("SELECT count(*) FROM outbox.claim_messages('w', 10, 60)")
        assert (1,) == await cursor.fetchone()
    assert [] == list(await dispatch_store.claim(owner="w2", limit=10, lease=timedelta(seconds=60)))
