"""Who may not operate the tenant events outbox (0020_events_operator.sql): every forbidden
call is SQLSTATE 42501. The reads and repairs that take a staff member's id on
trust are the database operator's alone; the staff versions and the metrics counts are the
API's; the retention sweep is the worker's."""

from __future__ import annotations

import pytest
from psycopg import errors

pytestmark = pytest.mark.integration

ID = "'00000000-0000-4000-8000-000000000001'::uuid"
OPERATOR_ONLY = [
    "SELECT * FROM events.backlog(NULL, 10)",
    "SELECT * FROM events.count_backlog()",
    "SELECT * FROM events.list_dead_letters(NULL, NULL, false, NULL, NULL, 10)",
    "SELECT * FROM events.parked_aggregates(NULL, NULL, NULL, NULL, 10)",
    f"SELECT * FROM events.event_detail(NULL, {ID})",
    f"SELECT * FROM events.event_records(NULL, {ID})",
    f"SELECT * FROM events.event_attempts(NULL, {ID})",
    f"SELECT * FROM events.republish_dead_letter({ID}, {ID}, {ID}, 'why', 'k')",
    f"SELECT * FROM events.release_dead_letter({ID}, {ID}, 'why', 'k')",
    f"SELECT * FROM events.operator_request_replay({ID}, 'k', 'release', {ID})",
    f"SELECT * FROM events.open_repair({ID}, 'release', {ID}, 'why', 'k')",
]
STAFF = [
    f"SELECT * FROM events.staff_backlog({ID}, 'd', 10)",
    f"SELECT * FROM events.staff_list_dead_letters({ID}, 'd', NULL, false, NULL, NULL, 10)",
    f"SELECT * FROM events.staff_parked_aggregates({ID}, 'd', NULL, NULL, NULL, 10)",
    f"SELECT * FROM events.staff_event_detail({ID}, 'd', {ID})",
    f"SELECT * FROM events.staff_event_records({ID}, 'd', {ID})",
    f"SELECT * FROM events.staff_event_attempts({ID}, 'd', {ID})",
    f"SELECT * FROM events.staff_republish_dead_letter({ID}, 'd', {ID}, {ID}, 'why', 'k')",
    f"SELECT * FROM events.staff_release_dead_letter({ID}, 'd', {ID}, 'why', 'k')",
]
METRICS = "SELECT * FROM events.backlog_metrics()"
PURGE = "SELECT events.purge_events('30 days', '90 days', 10)"
JOB_ROLES = ["identity_service", "outbox_producer", "outbox_runtime", "outbox_worker"]


async def _refused(connect_as, role: str, statement: str) -> None:
    async with connect_as(role) as conn:
        with pytest.raises(errors.InsufficientPrivilege) as caught:
            await conn.execute(statement)
    assert "42501" == caught.value.sqlstate


@pytest.mark.parametrize("role", JOB_ROLES)
@pytest.mark.parametrize("statement", OPERATOR_ONLY)
async def test_no_job_role_may_call_the_operators_functions(connect_as, role, statement):
    await _refused(connect_as, role, statement)


@pytest.mark.parametrize("role", ["outbox_producer", "outbox_runtime", "outbox_worker"])
@pytest.mark.parametrize("statement", [*STAFF, METRICS])
async def test_only_the_api_may_call_the_staff_functions(connect_as, role, statement):
    await _refused(connect_as, role, statement)


@pytest.mark.parametrize("role", ["identity_service", "outbox_producer", "outbox_runtime"])
async def test_only_the_worker_may_purge(connect_as, role):
    await _refused(connect_as, role, PURGE)


@pytest.mark.parametrize("statement", STAFF)
async def test_the_api_is_refused_without_a_staff_members_elevation(connect_as, statement):
    """identity_service may call them, and the database still refuses a made-up actor."""
    await _refused(connect_as, "identity_service", statement)


async def test_the_api_reads_the_metrics_and_the_worker_purges(connect_as):
    async with connect_as("identity_service") as conn:
        cursor = await conn.execute(METRICS)
        assert [("other", 0, 0, None, 0, 0)] == await cursor.fetchall()
    async with connect_as("outbox_worker") as conn:
        cursor = await conn.execute(PURGE)
        assert [(0,)] == await cursor.fetchall()
