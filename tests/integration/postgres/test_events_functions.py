"""The tenant events outbox's SQL core: append, claim, record, in plain SQL as the
roles that call them."""

from __future__ import annotations

import asyncio
import uuid

import psycopg
import pytest
from psycopg import errors

from tests.events_sql import BILLING, SALES, UNMAPPED, append, claim, onboard, record, rows

pytestmark = pytest.mark.integration

WORKER = "outbox_worker"
ORG = uuid.UUID("0190aaaa-0000-7000-8000-000000000001")
LOGIN = "events_test_login"  # a login role mapped as a producer, calling without SET ROLE


@pytest.fixture
async def onboarded(connect_as):
    async with connect_as() as conn:
        await onboard(conn)


async def test_an_appended_event_is_claimed_and_published(onboarded, connect_as):
    async with connect_as(SALES) as conn:
        event = await append(conn, ORG, "order-1", payload={"total": 42})

    async with connect_as(WORKER) as conn:
        [claimed] = await claim(conn)
        assert (event, ORG, "sales.order_placed", 1) == (
            claimed["event_id"],
            claimed["organization_id"],
            claimed["event_type"],
            claimed["contract_version"],
        )
        assert ({"total": 42}, "order", "order-1", 0) == (
            claimed["payload"],
            claimed["aggregate_type"],
            claimed["aggregate_id"],
            claimed["attempts"],
        )
        assert ["recorded"] == await record(conn, [claimed])
        assert [] == await claim(conn)

    async with connect_as() as conn:
        assert [("published", 1)] == await rows(
            conn, "SELECT state, attempt_count FROM events.outbox_records"
        )
        assert [(event, claimed["record_id"], ORG)] == await rows(
            conn,
            "SELECT domain_event_id, outbox_record_id, organization_id"
            " FROM events.domain_event_publications",
        )
        assert [(1, True, "published")] == await rows(
            conn, "SELECT attempt, counted, outcome FROM events.publication_attempts"
        )


async def test_the_events_of_one_aggregate_are_published_in_append_order(onboarded, connect_as):
    async with connect_as(SALES) as conn:
        first = await append(conn, ORG, "order-1")
        second = await append(conn, ORG, "order-1")
        other = await append(conn, ORG, "order-2")

    async with connect_as(WORKER) as conn:
        batch = await claim(conn)
        assert {first, other} == {c["event_id"] for c in batch}
        assert ["recorded", "recorded"] == await record(conn, batch)
        [then] = await claim(conn)
        assert second == then["event_id"]


async def test_a_retry_keeps_the_aggregate_waiting_until_it_is_due(onboarded, connect_as):
    async with connect_as(SALES) as conn:
        await append(conn, ORG, "order-1")
        await append(conn, ORG, "order-1")

    async with connect_as(WORKER) as conn:
        batch = await claim(conn)
        [retry_at] = await rows(conn, "SELECT now() + interval '1 hour'")
        assert ["recorded"] == await record(
            conn, batch, "retry", failure_class="UNAVAILABLE", retry_at=retry_at[0]
        )
        assert [] == await claim(conn)

    async with connect_as() as conn:
        assert [("pending", 1, True), ("pending", 0, False)] == await rows(
            conn,
            "SELECT state, attempt_count, head FROM events.outbox_records ORDER BY append_sequence",
        )


# Roles ----------------------------------------------------------------------------------------

NOT_PRODUCERS = ["outbox_worker", "outbox_producer", "identity_service", "outbox_runtime", UNMAPPED]
NOT_WORKERS = [SALES, BILLING, "outbox_producer", "identity_service", "outbox_runtime"]
NOT_OWNERS = ["outbox_worker", SALES, "outbox_producer", "identity_service", "outbox_runtime"]
REGISTRATION = [
    "SELECT events.register_module('crm')",
    "SELECT events.register_event_type('sales.order_shipped', 'sales')",
    "SELECT events.publish_contract_version('sales.order_placed', 2)",
    "SELECT events.retire_event_type('sales.order_placed')",
    f"SELECT events.map_producer_role('{UNMAPPED}', 'sales')",
]
INTERNAL = [
    f"SELECT events.promote_head('{ORG}', 'order', 'o-1')",
    f"SELECT events.promote_head_after('{ORG}', 'order', 'o-1', 0)",  # 0053
    f"SELECT events.reopen_aggregate('{ORG}', 'order', 'o-1')",
    f"SELECT events.aggregate_lock_key('{ORG}', 'order', 'o-1')",
]


async def _refused(connect_as, role: str, statement: str, *params: object) -> None:
    async with connect_as(role) as conn:
        with pytest.raises(errors.InsufficientPrivilege):
            await conn.execute(statement.encode(), params)


@pytest.mark.parametrize("role", NOT_PRODUCERS)
async def test_only_a_mapped_producer_role_may_append(onboarded, connect_as, role):
    async with connect_as(role) as conn:
        with pytest.raises(errors.InsufficientPrivilege):
            await append(conn, ORG)

    async with connect_as() as conn:
        assert [] == await rows(conn, "SELECT id FROM events.domain_events")


async def test_a_producer_cannot_append_another_modules_type(onboarded, connect_as):
    async with connect_as(BILLING) as conn:
        with pytest.raises(errors.InsufficientPrivilege, match="another module"):
            await append(conn, ORG, event_type="sales.order_placed")
        await append(conn, ORG, event_type="billing.invoice_sent")


@pytest.mark.parametrize("role", NOT_WORKERS)
async def test_only_the_worker_may_claim_and_record(onboarded, connect_as, role):
    await _refused(connect_as, role, "SELECT * FROM events.claim_outbox_batch('w', 1, 30)")
    await _refused(
        connect_as,
        role,
        "SELECT * FROM events.record_publication_attempt('{}', '{}', '{}', '{}', '{}', '{}',"
        " '{}', '{}')",
    )


@pytest.mark.parametrize("role", NOT_OWNERS)
@pytest.mark.parametrize("statement", REGISTRATION + INTERNAL)
async def test_registration_and_the_internal_helpers_are_the_owners(
    onboarded, connect_as, role, statement
):
    await _refused(connect_as, role, statement)


async def test_a_login_role_without_set_role_appends_as_its_own_module(
    onboarded, connect_as, database_url
):
    async with connect_as() as conn:
        await conn.execute(
            "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname ="
            f" '{LOGIN}') THEN CREATE ROLE {LOGIN} LOGIN; END IF;"
            " EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$"
        )
        await conn.execute(f"SELECT events.map_producer_role('{LOGIN}', 'sales')")

    async with await psycopg.AsyncConnection.connect(
        database_url, user=LOGIN, autocommit=True
    ) as conn:
        event = await append(conn, ORG)

    async with connect_as() as conn:
        assert [("sales",)] == await rows(
            conn, "SELECT producer_module_code FROM events.domain_events WHERE id = %s", event
        )


# Registration ---------------------------------------------------------------------------------


async def test_registration_is_idempotent(onboarded, connect_as):
    async with connect_as() as conn:
        await onboard(conn)
        assert [("sales.order_placed", "sales", 1)] == await rows(
            conn,
            "SELECT t.code, t.owner_module_code, v.contract_version FROM events.event_types t"
            " JOIN events.event_type_versions v ON v.event_type_code = t.code"
            " WHERE t.code = 'sales.order_placed'",
        )


@pytest.mark.parametrize(
    ("statement", "names"),
    [
        ("SELECT events.register_module('Sales')", "p_code"),
        ("SELECT events.register_event_type('sales.Order', 'sales')", "p_code"),
        ("SELECT events.register_event_type('crm.lead_won', 'crm')", "p_owner_module"),
        ("SELECT events.register_event_type('billing.order_placed', 'sales')", "p_code"),
        ("SELECT events.publish_contract_version('sales.order_placed', 0)", "p_version"),
        ("SELECT events.publish_contract_version('sales.nothing', 1)", "p_event_type"),
        ("SELECT events.retire_event_type('sales.nothing')", "p_code"),
        ("SELECT events.map_producer_role('no_such_role_here', 'sales')", "p_role"),
        ("SELECT events.map_producer_role('outbox_worker', 'sales')", "p_role"),
        (f"SELECT events.map_producer_role('{SALES}', 'billing')", "p_role"),
        (f"SELECT events.map_producer_role('{UNMAPPED}', 'crm')", "p_module"),
    ],
)
async def test_a_bad_registration_is_refused_naming_the_parameter(
    onboarded, connect_as, statement, names
):
    async with connect_as("outbox_owner") as conn:
        with pytest.raises(errors.InvalidParameterValue, match=names):
            await conn.execute(statement.encode())


async def test_a_type_registered_again_by_another_module_is_refused(onboarded, connect_as):
    async with connect_as("outbox_owner") as conn:
        await conn.execute("SELECT events.register_module('sales2')")
        with pytest.raises(errors.InvalidParameterValue, match="p_code"):
            await conn.execute("SELECT events.register_event_type('sales.order_placed', 'sales2')")


async def test_a_retired_type_gets_no_new_version(onboarded, connect_as):
    async with connect_as("outbox_owner") as conn:
        await conn.execute("SELECT events.retire_event_type('sales.order_placed')")
        await conn.execute("SELECT events.publish_contract_version('sales.order_placed', 1)")
        with pytest.raises(psycopg.Error) as caught:
            await conn.execute("SELECT events.publish_contract_version('sales.order_placed', 2)")
    assert "OXE02" == caught.value.sqlstate


# Append ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "sqlstate"),
    [
        ({"event_type": "sales.order_cancelled", "key": "other"}, "OXE03"),
        ({"version": 2, "key": "other"}, "OXE03"),
        ({"payload": {"total": 2}, "key": "k"}, "OXE01"),
    ],
    ids=["unknown-type", "unpublished-version", "other-content"],
)
async def test_each_refusal_has_its_own_sqlstate(onboarded, connect_as, change, sqlstate):
    async with connect_as(SALES) as conn:
        await append(conn, ORG, key="k")
        with pytest.raises(psycopg.Error) as caught:
            await append(conn, ORG, **change)
    assert sqlstate == caught.value.sqlstate


@pytest.mark.parametrize(
    ("change", "names"),
    [
        ({"aggregate_type": "Order"}, "p_aggregate_type"),
        ({"aggregate_id": ""}, "p_aggregate_id"),
        ({"key": "x" * 201}, "p_idempotency_key"),
        ({"trace_context": "not-a-traceparent"}, "p_trace_context"),
        ({"version": 0}, "p_contract_version"),
    ],
)
async def test_a_bad_argument_is_refused_naming_the_parameter(onboarded, connect_as, change, names):
    async with connect_as(SALES) as conn:
        with pytest.raises(errors.InvalidParameterValue, match=names):
            await append(conn, ORG, **change)


async def test_a_payload_must_be_an_object(onboarded, connect_as):
    async with connect_as(SALES) as conn:
        with pytest.raises(errors.InvalidParameterValue, match="p_payload"):
            await conn.execute(
                "SELECT events.append_domain_event(%s, 'sales.order_placed', 1, 'order', 'o',"
                " 'k', '[1]', now())",
                (ORG,),
            )


async def test_an_append_rolls_back_with_its_business_transaction(onboarded, connect_as):
    async with connect_as(SALES, autocommit=False) as conn:
        await append(conn, ORG)
        await conn.rollback()

    async with connect_as() as conn:
        assert [(0, 0)] == await rows(
            conn,
            "SELECT (SELECT count(*) FROM events.domain_events),"
            " (SELECT count(*) FROM events.outbox_records)",
        )


async def _second_append(conn, **kwargs) -> asyncio.Task:
    """Start an append that must wait for another transaction; check that it does wait."""
    task = asyncio.create_task(append(conn, ORG, **kwargs))
    await asyncio.sleep(0.3)
    assert not task.done(), "the second append did not wait for the first transaction"
    return task


@pytest.mark.parametrize("aggregate", ["order-1", "order-2"], ids=["same-lock", "other-lock"])
async def test_concurrent_replays_of_one_key_return_one_id(onboarded, connect_as, aggregate):
    """Same aggregate: the second waits on the aggregate's lock; another aggregate: on the
    key's unique index. Either way it answers the first id or OXE01, never 23505."""
    async with (
        connect_as(SALES, autocommit=False) as first,
        connect_as(SALES, autocommit=False) as second,
    ):
        event = await append(first, ORG, "order-1", key="k")
        waiting = await _second_append(second, aggregate_id=aggregate, key="k")
        await first.commit()
        if aggregate == "order-1":
            assert event == await waiting
        else:
            with pytest.raises(psycopg.Error) as caught:
                await waiting
            assert "OXE01" == caught.value.sqlstate
        await second.rollback()

    async with connect_as() as conn:
        assert [(1,)] == await rows(conn, "SELECT count(*) FROM events.domain_events")


async def test_a_replay_waiting_on_a_rolled_back_append_appends_it(onboarded, connect_as):
    async with (
        connect_as(SALES, autocommit=False) as first,
        connect_as(SALES, autocommit=False) as second,
    ):
        event = await append(first, ORG, key="k")
        waiting = await _second_append(second, key="k")
        await first.rollback()
        assert event != await waiting
        await second.commit()

    async with connect_as() as conn:
        assert [(1, 1)] == await rows(
            conn,
            "SELECT (SELECT count(*) FROM events.domain_events),"
            " (SELECT count(*) FROM events.outbox_records WHERE head)",
        )


async def test_appends_to_one_aggregate_are_numbered_in_commit_order(onboarded, connect_as):
    async with (
        connect_as(SALES, autocommit=False) as first,
        connect_as(SALES, autocommit=False) as second,
    ):
        earlier = await append(first, ORG)
        waiting = await _second_append(second)
        await first.commit()
        later = await waiting
        await second.commit()

    async with connect_as() as conn:
        assert [(earlier,), (later,)] == await rows(
            conn, "SELECT id FROM events.domain_events ORDER BY append_sequence"
        )


# The deferred one-record rule ----------------------------------------------------------------

INSERT_EVENT = """
INSERT INTO events.domain_events (
    id, organization_id, event_type_code, contract_version, producer_module_code,
    aggregate_type, aggregate_id, idempotency_key, payload, occurred_at, appended_at
) VALUES (%s, %s, 'sales.order_placed', 1, 'sales', 'order', 'o-1', %s, '{}', now(), now())
"""
INSERT_RECORD = """
INSERT INTO events.outbox_records (
    id, domain_event_id, organization_id, aggregate_type, aggregate_id, append_sequence,
    available_at, created_at, state, dead_lettered_at, dead_letter_reason
)
SELECT gen_random_uuid(), e.id, e.organization_id, e.aggregate_type, e.aggregate_id,
       e.append_sequence, now(), now(), %s,
       CASE WHEN %s = 'dead_lettered' THEN now() END,
       CASE WHEN %s = 'dead_lettered' THEN 'REJECTED' END
FROM events.domain_events AS e WHERE e.id = %s
"""


@pytest.mark.parametrize(
    "records", [[], ["dead_lettered", "pending"]], ids=["no-record", "two-records"]
)
async def test_an_event_without_exactly_one_record_does_not_commit(onboarded, connect_as, records):
    event = uuid.uuid4()
    async with connect_as("outbox_owner", autocommit=False) as conn:
        await conn.execute(INSERT_EVENT, (event, ORG, "direct"))
        for state in records:
            await conn.execute(INSERT_RECORD, (state, state, state, event))
        with pytest.raises(errors.IntegrityConstraintViolation, match="exactly one"):
            await conn.commit()

    async with connect_as() as conn:
        assert [] == await rows(conn, "SELECT id FROM events.domain_events")


async def test_an_event_with_its_one_record_commits(onboarded, connect_as):
    event = uuid.uuid4()
    async with connect_as("outbox_owner", autocommit=False) as conn:
        await conn.execute(INSERT_EVENT, (event, ORG, "direct"))
        await conn.execute(INSERT_RECORD, ("pending", "pending", "pending", event))
        await conn.commit()


# Recording ------------------------------------------------------------------------------------


async def test_an_attempt_out_of_sequence_or_lease_cannot_be_inserted(onboarded, connect_as):
    async with connect_as(SALES) as conn:
        await append(conn, ORG)
    async with connect_as(WORKER) as conn:
        [claimed] = await claim(conn)
    insert = (
        "INSERT INTO events.publication_attempts (outbox_record_id, attempt, counted, outcome,"
        " failure_class, recorded_at, retry_at, lease_token)"
        " VALUES (%s, %s, true, 'retry', 'UNAVAILABLE', now(), now() + interval '1 hour', %s)"
    )

    async with connect_as("outbox_owner") as conn:
        with pytest.raises(errors.IntegrityConstraintViolation, match="expected 1"):
            await conn.execute(insert, (claimed["record_id"], 2, claimed["lease_token"]))
        with pytest.raises(errors.IntegrityConstraintViolation, match="live lease"):
            await conn.execute(insert, (claimed["record_id"], 1, uuid.uuid4()))
        await conn.execute(insert, (claimed["record_id"], 1, claimed["lease_token"]))


EXPIRE_LEASE = (
    "UPDATE events.outbox_records SET lease_expires_at = now() - interval '1 second' WHERE id = %s"
)


async def _claimed_then_expired(connect_as):
    """One appended event, claimed by the worker, its lease then expired (as superuser)."""
    async with connect_as(SALES) as conn:
        await append(conn, ORG)
    async with connect_as(WORKER) as conn:
        [claimed] = await claim(conn)
    async with connect_as() as conn:
        await conn.execute(EXPIRE_LEASE, (claimed["record_id"],))
    return claimed


async def test_a_worker_whose_lease_expired_cannot_record_even_with_its_token(
    onboarded, connect_as
):
    """An expired lease's record is lease_lost and changes nothing, though its token matches."""
    claimed = await _claimed_then_expired(connect_as)

    async with connect_as(WORKER) as conn:
        assert ["lease_lost"] == await record(conn, [claimed])

    async with connect_as() as conn:
        assert [("leased", claimed["lease_token"], 0)] == await rows(
            conn, "SELECT state, lease_token, attempt_count FROM events.outbox_records"
        )
        assert [] == await rows(conn, "SELECT id FROM events.publication_attempts")
        assert [] == await rows(
            conn, "SELECT domain_event_id FROM events.domain_event_publications"
        )


async def test_an_attempt_under_an_expired_lease_cannot_be_inserted(onboarded, connect_as):
    """The attempts table refuses a row under an expired lease even with the right token."""
    claimed = await _claimed_then_expired(connect_as)

    async with connect_as("outbox_owner") as conn:
        with pytest.raises(errors.IntegrityConstraintViolation, match="live lease"):
            await conn.execute(
                "INSERT INTO events.publication_attempts (outbox_record_id, attempt, counted,"
                " outcome, failure_class, recorded_at, retry_at, lease_token)"
                " VALUES (%s, 1, true, 'published', NULL, now(), NULL, %s)",
                (claimed["record_id"], claimed["lease_token"]),
            )


async def test_a_retry_time_in_the_past_is_refused(onboarded, connect_as):
    async with connect_as(SALES) as conn:
        await append(conn, ORG)

    async with connect_as(WORKER) as conn:
        batch = await claim(conn)
        [(past,)] = await rows(conn, "SELECT now() - interval '1 second'")
        with pytest.raises(errors.InvalidParameterValue, match="p_retry_at"):
            await record(conn, batch, "retry", failure_class="UNAVAILABLE", retry_at=past)
        with pytest.raises(errors.InvalidParameterValue, match="p_retry_at"):
            await record(conn, batch, "release", failure_class="PROVIDER_SUSPENDED", retry_at=past)

    async with connect_as() as conn:
        assert [("leased", 0)] == await rows(
            conn, "SELECT state, attempt_count FROM events.outbox_records"
        )
        assert [] == await rows(conn, "SELECT id FROM events.publication_attempts")


async def test_a_dead_letter_is_recorded_and_parks_its_aggregate(onboarded, connect_as):
    async with connect_as(SALES) as conn:
        await append(conn, ORG, "order-1")
        await append(conn, ORG, "order-1")

    async with connect_as(WORKER) as conn:
        batch = await claim(conn)
        assert ["recorded"] == await record(conn, batch, "dead_letter", failure_class="REJECTED")
        assert [] == await claim(conn)

    async with connect_as() as conn:
        assert [(batch[0]["record_id"], "REJECTED", None)] == await rows(
            conn, "SELECT outbox_record_id, reason, resolution FROM events.dead_letters"
        )
        assert [("dead_lettered", False), ("pending", False)] == await rows(
            conn, "SELECT state, head FROM events.outbox_records ORDER BY append_sequence"
        )


@pytest.mark.parametrize(
    ("change", "names"),
    [
        ({"outcome": "sent"}, "p_outcomes"),
        ({"outcome": "retry", "failure_class": "UNAVAILABLE"}, "p_outcomes"),
        ({"outcome": "dead_letter", "failure_class": "challenge_expired"}, "p_failure_classes"),
        ({"outcome": "dead_letter", "failure_class": "PROVIDER_SUSPENDED"}, "p_failure_classes"),
    ],
)
async def test_a_bad_outcome_is_refused_naming_the_parameter(onboarded, connect_as, change, names):
    async with connect_as(SALES) as conn:
        await append(conn, ORG)
    async with connect_as(WORKER) as conn:
        batch = await claim(conn)
        with pytest.raises(errors.InvalidParameterValue, match=names):
            await record(conn, batch, **change)


async def test_arrays_of_different_lengths_are_refused(onboarded, connect_as):
    async with connect_as(WORKER) as conn:
        with pytest.raises(errors.InvalidParameterValue, match="p_record_ids"):
            await conn.execute(
                "SELECT * FROM events.record_publication_attempt(ARRAY[gen_random_uuid()],"
                " '{}', '{}', '{}', '{}', '{}', '{}', '{}')"
            )


async def test_the_worker_is_woken_by_an_append(onboarded, connect_as, database_url):
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as listener:
        await listener.execute("LISTEN events_work")
        async with connect_as(SALES) as conn:
            await append(conn, ORG)
        async for notify in listener.notifies(timeout=10, stop_after=1):
            assert "events_work" == notify.channel
