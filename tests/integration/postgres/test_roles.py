"""Least privilege: the worker only dispatches, the API and producers never do; every forbidden
call fails with SQLSTATE 42501 (tests/integration/postgres/test_roles_by_job.py
has what a producer may not do to identities and staff)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import psycopg
import pytest
from psycopg import errors

from outbox.adapters.postgres.dispatch_store import PostgresDispatchStore
from outbox.adapters.postgres.outbox_writer import PostgresOutboxWriter
from outbox.adapters.postgres.pool import open_pool
from outbox.adapters.postgres.work_listener import WorkListener
from outbox.application.errors import PermissionDenied
from outbox.domain.delivery.failures import FailureClass
from tests.contract.harness import MemoryHarness, make_message

pytestmark = pytest.mark.integration

CLAIM = "SELECT * FROM outbox.claim_messages('w', 1, 60)"
RECORD = (
    "SELECT * FROM outbox.record_outcomes('{}'::uuid[], '{}'::uuid[], '{}'::int[], '{}'::text[],"
    " '{}'::text[], '{}'::text[], '{}'::text[], '{}'::text[], '{}'::timestamptz[],"
    " '{}'::boolean[])"
)
EXPIRE = "SELECT outbox.expire_messages(10)"
PURGE = "SELECT outbox.purge_messages('30 days', '90 days', 10)"
ENQUEUE = (
    "SELECT outbox.enqueue_message(gen_random_uuid(), 'notification', 'email',"
    " 'person@example.com', NULL, 'hello')"
)
CANCEL = "SELECT outbox.cancel_by_subject(gen_random_uuid(), 'challenge_consumed')"
TABLE_READS = [
    "SELECT * FROM outbox.envelopes",
    "SELECT * FROM outbox.messages",
    "SELECT * FROM outbox.attempts",
    "SELECT * FROM outbox_meta.migrations",
]
TABLE_WRITES = [
    "DELETE FROM outbox.envelopes",
    "UPDATE outbox.messages SET state = 'pending'",
    "INSERT INTO outbox.attempts (message_id) VALUES (gen_random_uuid())",
]


async def _refused(connect_as, role: str, statement: str) -> None:
    async with connect_as(role) as conn:
        with pytest.raises(errors.InsufficientPrivilege) as caught:
            await conn.execute(statement)
    assert "42501" == caught.value.sqlstate


API_AND_PRODUCERS = ["identity_service", "outbox_producer", "outbox_runtime"]


@pytest.mark.parametrize("role", API_AND_PRODUCERS)
@pytest.mark.parametrize("statement", [CLAIM, RECORD, EXPIRE, PURGE, *TABLE_READS, *TABLE_WRITES])
async def test_the_api_and_producers_cannot_dispatch_or_read_the_queue(connect_as, role, statement):
    await _refused(connect_as, role, statement)


@pytest.mark.parametrize("statement", [ENQUEUE, CANCEL, *TABLE_READS, *TABLE_WRITES])
async def test_the_worker_role_cannot_produce_or_touch_tables(connect_as, statement):
    await _refused(connect_as, "outbox_worker", statement)


async def test_a_role_outside_the_grants_cannot_call_any_queue_function(connect_as):
    async with connect_as() as conn:
        await conn.execute("CREATE ROLE outbox_test_stranger NOLOGIN")
    try:
        for statement in (CLAIM, RECORD, EXPIRE, PURGE, ENQUEUE, CANCEL):
            await _refused(connect_as, "outbox_test_stranger", statement)
    finally:
        async with connect_as() as conn:
            await conn.execute("DROP ROLE outbox_test_stranger")


async def test_the_worker_cannot_read_an_identity_table(connect_as):
    # The identity migrations add tables as outbox_owner; none may be readable by the worker.
    async with connect_as("outbox_owner") as conn:
        await conn.execute("CREATE TABLE identity.added_later (secret_hash text)")
    async with connect_as() as conn:
        cursor = await conn.execute(
            "SELECT format('%I.%I', schemaname, tablename) FROM pg_tables"
            " WHERE schemaname = 'identity'"
        )
        tables = [row[0] for row in await cursor.fetchall()]
    assert "identity.added_later" in tables
    for table in tables:
        await _refused(connect_as, "outbox_worker", f"SELECT * FROM {table}")


@pytest.mark.parametrize("producer", API_AND_PRODUCERS)
async def test_allowed_calls_succeed_for_their_own_role(connect_as, producer):
    async with connect_as(producer) as conn:
        await conn.execute(ENQUEUE)
        if producer == "identity_service":  # withdrawing secrets is the identity module's alone
            await conn.execute(CANCEL)
        else:
            with pytest.raises(errors.InsufficientPrivilege):
                await conn.execute(CANCEL)
    async with connect_as("outbox_worker") as conn:
        for statement in (CLAIM, RECORD, EXPIRE, PURGE):
            await conn.execute(statement)


async def test_the_adapters_raise_permission_denied_for_the_wrong_role(database_url, connect_as):
    pool = await open_pool(database_url, max_size=1, role="identity_service")
    store = PostgresDispatchStore(pool, WorkListener(database_url))
    try:
        with pytest.raises(PermissionDenied):
            await store.claim(owner="intruder", limit=1, lease=timedelta(seconds=60))
    finally:
        await pool.close()
    async with connect_as("outbox_worker") as conn:
        writer = PostgresOutboxWriter(conn)
        with pytest.raises(PermissionDenied):
            await writer.enqueue(make_message(MemoryHarness()))
        with pytest.raises(PermissionDenied):
            await writer.cancel_by_subject(
                subject_id=uuid.uuid4(), reason=FailureClass.CHALLENGE_CONSUMED
            )


async def test_group_roles_cannot_log_in(database_url):
    roles = (
        "outbox_owner",
        "outbox_producer",
        "identity_service",
        "outbox_worker",
        "outbox_runtime",
    )
    for role in roles:
        url = psycopg.conninfo.make_conninfo(database_url, user=role)
        with pytest.raises(psycopg.OperationalError, match="not permitted to log in"):
            await psycopg.AsyncConnection.connect(url)
