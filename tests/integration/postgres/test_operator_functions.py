"""The operator SQL functions at the database: role boundaries (42501), the database operator
check, SQL masking against the domain's, and reissue races under real row locks.

The elevation checks of the staff_* functions are in test_roles_by_job.py."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import errors, sql
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.operator_store import PostgresOperatorStore
from outbox.adapters.postgres.pool import open_pool
from outbox.application.errors import InvalidRequest, PermissionDenied
from outbox.application.staff import RequestInProgress, StaffActor, StaffRequired
from outbox.domain.destinations import mask
from tests.contract.operator_harness import PostgresOperatorHarness, challenge, dead_letter

pytestmark = pytest.mark.integration

ACTOR = "'00000000-0000-7000-8000-000000000001'::uuid"
ID = "gen_random_uuid()"
HASH = "$argon2id$v=19$m=8,t=1,p=1$bmV3c2FsdA$bmV3LWhhc2g"
ENVELOPE = "v1.test-key.bmV3c2FsdA.bmV3bm9uY2U.bmV3Y2lwaGVy"
STAFF_CALLS = {
    "backlog": f"SELECT * FROM outbox.backlog({ACTOR})",
    "dead_letters": f"SELECT * FROM outbox.dead_letters({ACTOR}, NULL, NULL, 10)",
    "message_detail": f"SELECT * FROM outbox.message_detail({ACTOR}, {ID})",
    "message_attempts": f"SELECT * FROM outbox.message_attempts({ACTOR}, {ID})",
    "requeue": f"SELECT * FROM outbox.requeue_dead_letter({ACTOR}, {ID}, {ID}, 'k')",
    "reissue": (
        f"SELECT * FROM outbox.reissue_dead_letter({ACTOR}, {ID}, {ID}, '{ENVELOPE}',"
        f" '{HASH}', 'k')"
    ),
}
INTERNAL_CALLS = {
    "mask_destination": "SELECT outbox.mask_destination('a@example.com')",
    "require_staff": f"SELECT outbox.require_staff({ACTOR})",
    "require_operator": "SELECT outbox.require_operator(NULL)",
    "count_backlog": "SELECT * FROM outbox.count_backlog()",
    "staff_request_replay": (
        f"SELECT * FROM outbox.staff_request_replay({ACTOR}, 'k', 'reissue', {ID})"
    ),
    "staff_identity": "SELECT outbox.staff_identity('a@example.com')",
    "grant_staff": "SELECT * FROM outbox.grant_staff('a@example.com')",
    "revoke_staff": "SELECT * FROM outbox.revoke_staff('a@example.com')",
}
# What the API calls: the same, with the digest of the staff member's elevation token.
ELEVATED_CALLS = {
    "backlog": f"SELECT * FROM outbox.staff_backlog({ACTOR}, NULL)",
    "dead_letters": f"SELECT * FROM outbox.staff_dead_letters({ACTOR}, NULL, NULL, NULL, 10)",
    "message_detail": f"SELECT * FROM outbox.staff_message_detail({ACTOR}, NULL, {ID})",
    "message_attempts": f"SELECT * FROM outbox.staff_message_attempts({ACTOR}, NULL, {ID})",
    "requeue": f"SELECT * FROM outbox.staff_requeue_dead_letter({ACTOR}, NULL, {ID}, {ID}, 'k')",
    "reissue": (
        f"SELECT * FROM outbox.staff_reissue_dead_letter({ACTOR}, NULL, {ID}, {ID},"
        f" '{ENVELOPE}', '{HASH}', 'k')"
    ),
}
INTERNAL_CALLS["require_elevation"] = f"SELECT outbox.require_elevation({ACTOR}, NULL)"
METRICS = "SELECT * FROM outbox.backlog_metrics()"
API = "identity_service"


async def _sqlstate(connect_as, role: str | None, statement: str) -> str | None:
    async with connect_as(role) as conn:
        try:
            await conn.execute(statement.encode())
        except psycopg.Error as error:
            return error.sqlstate
    return None


@pytest.mark.parametrize("role", ["outbox_worker", "outbox_producer", "outbox_runtime"])
@pytest.mark.parametrize(
    "statement",
    [*STAFF_CALLS.values(), *ELEVATED_CALLS.values(), *INTERNAL_CALLS.values(), METRICS],
    ids=[*STAFF_CALLS, *(f"staff_{n}" for n in ELEVATED_CALLS), *INTERNAL_CALLS, "metrics"],
)
async def test_the_worker_and_producers_cannot_execute_any_operator_function(
    connect_as, role, statement
):
    assert "42501" == await _sqlstate(connect_as, role, statement)


@pytest.mark.parametrize(
    "statement",
    [*STAFF_CALLS.values(), *INTERNAL_CALLS.values()],
    ids=[*STAFF_CALLS, *INTERNAL_CALLS],
)
async def test_the_api_role_cannot_execute_the_database_operators_functions(connect_as, statement):
    """The 0007 functions take a staff id on trust; the API gets the elevation-checked ones."""
    assert "42501" == await _sqlstate(connect_as, API, statement)


@pytest.mark.parametrize("statement", ELEVATED_CALLS.values(), ids=list(ELEVATED_CALLS))
async def test_the_api_role_naming_no_staff_member_is_refused_before_any_row_is_read(
    connect_as, statement
):
    async with connect_as(API) as conn:
        with pytest.raises(errors.InsufficientPrivilege) as caught:
            await conn.execute(statement.encode())
    assert "staff membership required" == caught.value.diag.message_primary


async def test_the_api_role_reads_the_metrics_counts_without_an_identity(connect_as):
    assert await _sqlstate(connect_as, API, METRICS) is None


@pytest.fixture
def login_roles(database_url: str) -> Iterator[dict[str, str]]:
    """Two throw-away login roles: an API login (identity_service) and an operator login (the
    migrator's: outbox_owner, and identity_service to serve the API too); URLs to connect."""
    suffix = uuid.uuid4().hex[:8]
    names = {"api": f"test_api_{suffix}", "operator": f"test_operator_{suffix}"}
    groups = {"api": [API], "operator": ["outbox_owner", API]}
    with psycopg.connect(database_url, autocommit=True) as conn:
        for kind, name in names.items():
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN IN ROLE {}").format(
                    sql.Identifier(name), sql.SQL(", ").join(map(sql.Identifier, groups[kind]))
                )
            )
    urls = {kind: psycopg.conninfo.make_conninfo(database_url, user=n) for kind, n in names.items()}
    try:
        yield urls
    finally:
        with psycopg.connect(database_url, autocommit=True) as conn:
            for name in names.values():
                conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


async def test_without_an_actor_only_a_login_of_the_owner_role_reads(login_roles):
    """The database operator is whoever may administer the schema, checked at the login when
    no SET ROLE is in effect."""
    query = b"SELECT pending FROM outbox.backlog(NULL)"
    async with await psycopg.AsyncConnection.connect(login_roles["operator"]) as conn:
        assert (0,) == await (await conn.execute(query)).fetchone()
    async with await psycopg.AsyncConnection.connect(login_roles["api"]) as conn:
        with pytest.raises(errors.InsufficientPrivilege):
            await conn.execute(query)


async def test_an_operator_login_acting_as_the_api_role_is_refused_without_an_actor(
    login_roles,
):
    async with await psycopg.AsyncConnection.connect(login_roles["operator"]) as conn:
        await conn.execute("SET ROLE identity_service")
        with pytest.raises(errors.InsufficientPrivilege):
            await conn.execute("SELECT pending FROM outbox.backlog(NULL)")


# Masking ----------------------------------------------------------------------------------------

TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    max_size=80,
)
NEAR_EMAILS = st.from_regex(
    r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~éß -]{0,70}@[A-Za-z0-9.é_-]{0,70}", fullmatch=True
)
NEAR_PHONES = st.from_regex(r"\+?[0-9٣]{0,17}", fullmatch=True)
DESTINATIONS = st.one_of(st.emails(), NEAR_EMAILS, NEAR_PHONES, TEXT)


@pytest.fixture
def mask_connection(database_url: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(database_url, autocommit=True) as conn:
        yield conn


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(values=st.lists(DESTINATIONS, min_size=1, max_size=40))
def test_sql_masking_matches_the_domain_for_any_text(mask_connection, values):
    rows = mask_connection.execute(
        "SELECT outbox.mask_destination(v) FROM unnest(%s::text[]) WITH ORDINALITY AS t (v, n)"
        " ORDER BY n",
        (values,),
    ).fetchall()
    assert [mask(v) for v in values] == [row[0] for row in rows]


@pytest.mark.parametrize(
    "value",
    ["Alice@Example.COM", "+34612345678", "+1234567", "not an address", "", "a@b", "é@x.io"],
)
def test_sql_masking_matches_the_domain_on_known_cases(mask_connection, value):
    [(masked,)] = mask_connection.execute("SELECT outbox.mask_destination(%s)", (value,)).fetchall()
    assert mask(value) == masked


# Races ------------------------------------------------------------------------------------------


async def _reissuable(harness: PostgresOperatorHarness) -> tuple[StaffActor, uuid.UUID, Any]:
    """(stepped-up staff actor, dead letter id, challenge) for a reissue that may proceed."""
    await harness.add_identity("staff@example.com")
    staff = (await harness.admin.grant_staff("staff@example.com")).identity_id
    actor = StaffActor(identity_id=staff, elevation_digest=await harness.elevate(staff))
    person = await harness.add_identity("person@example.com")
    opened = challenge(harness, person)
    await harness.put_challenge(opened)
    letter = dead_letter(harness, subject_id=opened.id)
    await harness.put(letter)
    return actor, letter.id, opened


REISSUE = (
    "SELECT outcome FROM outbox.staff_reissue_dead_letter(%s, %s, %s, gen_random_uuid(), %s, %s,"
    " %s)"
)


async def _open_reissue(
    stack: contextlib.AsyncExitStack, connect_as, actor: StaffActor, letter_id: uuid.UUID, key: str
) -> psycopg.AsyncConnection[Any]:
    """A reissue inside a transaction left open, holding its locks until the test ends it."""
    conn = await stack.enter_async_context(connect_as(API, autocommit=False))
    cursor = await conn.execute(REISSUE, (*_proof(actor), letter_id, ENVELOPE, HASH, key))
    assert ("reissued",) == await cursor.fetchone()
    return conn


async def test_two_concurrent_reissues_enqueue_exactly_one_message(harness, connect_as):
    actor, letter_id, _ = await _reissuable(harness)
    async with contextlib.AsyncExitStack() as stack:
        first = await _open_reissue(stack, connect_as, actor, letter_id, "first")
        second = asyncio.create_task(_outcome(connect_as, actor, letter_id, "second"))
        await asyncio.sleep(0.3)
        assert not second.done()  # waiting on the dead letter's row lock
        await first.commit()
        assert "newer_message_exists" == await second

    backlog = await harness.admin.backlog(actor=None)
    assert 1 == backlog.pending
    assert 2 == len(await harness.audit())  # the grant and one reissue


def _proof(actor: StaffActor) -> tuple[uuid.UUID, str | None]:
    return actor.identity_id, actor.elevation_digest


async def _outcome(connect_as, actor, letter_id, key: str) -> str:
    async with connect_as(API) as conn:
        cursor = await conn.execute(REISSUE, (*_proof(actor), letter_id, ENVELOPE, HASH, key))
        row = await cursor.fetchone()
    return str(row[0])


async def test_the_same_key_while_its_first_request_runs_is_in_progress(harness, connect_as):
    actor, letter_id, _ = await _reissuable(harness)
    async with contextlib.AsyncExitStack() as stack:
        first = await _open_reissue(stack, connect_as, actor, letter_id, "same")
        with pytest.raises(RequestInProgress):
            await harness.api.reissue(
                actor=actor,
                message_id=letter_id,
                new_message_id=uuid.uuid4(),
                sealed_secret=ENVELOPE,
                code_hash=HASH,
                idempotency_key="same",
            )
        await first.rollback()

    receipt = await harness.api.reissue(
        actor=actor,
        message_id=letter_id,
        new_message_id=uuid.uuid4(),
        sealed_secret=ENVELOPE,
        code_hash=HASH,
        idempotency_key="same",
    )
    assert not receipt.replayed  # the first rolled back: this one did the work


async def test_a_failed_enqueue_leaves_the_challenge_and_the_audit_untouched(harness):
    actor, letter_id, opened = await _reissuable(harness)

    with pytest.raises(InvalidRequest):
        await harness.api.reissue(
            actor=actor,
            message_id=letter_id,
            new_message_id=uuid.uuid4(),
            sealed_secret="123456",  # not an envelope: the enqueue refuses it
            code_hash=HASH,
            idempotency_key="k",
        )

    assert opened.code_hash == await harness.code_hash(opened.id)
    assert 1 == len(await harness.audit())  # the grant only


async def test_the_adapter_tells_a_missing_grant_from_a_staff_refusal(database_url: str):
    pool: AsyncConnectionPool = await open_pool(database_url, min_size=1, role="outbox_worker")
    try:
        with pytest.raises(PermissionDenied) as caught:
            await PostgresOperatorStore(pool).backlog(actor=StaffActor(identity_id=uuid.uuid4()))
    finally:
        await pool.close()
    assert not isinstance(caught.value, StaffRequired)
