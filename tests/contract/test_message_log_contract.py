"""MessageLog contract: the database operator's search, dead-letter repairs and attempt
details behave alike in the fake and in PostgreSQL (outbox.find_messages and its siblings)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from outbox.adapters.postgres.message_log import PostgresMessageLog
from outbox.application.delivery.message_filters import MessageFilter, destination_digest
from outbox.application.delivery.operator_ports import MessageLog
from outbox.application.delivery.views import RepairAction
from outbox.application.errors import InvalidRequest, PermissionDenied
from outbox.application.staff import StaffActor
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import State
from outbox.domain.delivery.outcomes import DeadLetter, Retry
from outbox.domain.purposes import Purpose
from tests.contract.operator_harness import (
    MemoryOperatorHarness,
    OperatorHarness,
    PostgresOperatorHarness,
    code_message,
    dead_letter,
)
from tests.contract.test_operator_store_contract import (  # noqa: F401 - fixtures
    operator,
    operator_pools,
)
from tests.fakes.message_log import InMemoryMessageLog

ANY = MessageFilter()


def _logs(harness: OperatorHarness) -> tuple[MessageLog, MessageLog]:
    """The log as the database operator, and as the API role."""
    if isinstance(harness, MemoryOperatorHarness):
        return InMemoryMessageLog(harness.admin), InMemoryMessageLog(harness.api)
    assert isinstance(harness, PostgresOperatorHarness)
    return PostgresMessageLog(harness.admin_pool), PostgresMessageLog(harness.api_pool)


async def _ids(log: MessageLog, where: MessageFilter = ANY, **page: object) -> list[uuid.UUID]:
    params = {"after": None, "before": None, "limit": 10} | page
    return [m.id for m in await log.messages(where=where, **params)]  # type: ignore[arg-type]


async def test_every_filter_narrows_the_list_newest_first(
    operator: OperatorHarness,  # noqa: F811 - the imported fixture
) -> None:
    log, _ = _logs(operator)
    dead = dead_letter(operator, destination="bob@example.com", ago=timedelta(minutes=5))
    note = code_message(
        operator, purpose=Purpose.NOTIFICATION, destination="dana@example.com", age=timedelta(0)
    )
    for message in (dead, note):
        await operator.put(message)
    await operator.add_attempt(dead.id, 1, DeadLetter(reason=FailureClass.REJECTED), "smtp")
    middle = dead.created_at + timedelta(seconds=30)

    assert [note.id, dead.id] == await _ids(log)
    assert [dead.id] == await _ids(log, MessageFilter(state=State.DEAD_LETTERED))
    assert [note.id] == await _ids(log, MessageFilter(purpose=Purpose.NOTIFICATION))
    assert [dead.id] == await _ids(log, MessageFilter(reason=FailureClass.REJECTED))
    assert [] == await _ids(log, MessageFilter(reason=FailureClass.THROTTLED))
    assert [dead.id] == await _ids(log, MessageFilter(provider="smtp"))
    assert [note.id] == await _ids(log, MessageFilter(since=middle))
    assert [dead.id] == await _ids(log, MessageFilter(until=middle))
    assert [dead.id] == await _ids(log, MessageFilter(message_id=dead.id))
    digest = destination_digest("dana@example.com")
    assert [note.id] == await _ids(log, MessageFilter(destination_digest=digest))
    [row] = await log.messages(
        where=MessageFilter(message_id=dead.id), after=None, before=None, limit=1
    )
    assert ("b***@example.com", "smtp", FailureClass.REJECTED, None) == (
        row.destination,
        row.provider,
        row.dead_letter_reason,
        row.repair,
    )


async def test_pages_go_both_ways_and_a_cursor_must_name_a_message(
    operator: OperatorHarness,  # noqa: F811 - the imported fixture
) -> None:
    log, _ = _logs(operator)
    messages = [
        code_message(operator, destination=f"p{i}@example.com", age=timedelta(minutes=10 - i))
        for i in range(5)
    ]
    for message in messages:
        await operator.put(message)
    newest_first = [m.id for m in reversed(messages)]

    assert newest_first[2:4] == await _ids(log, after=newest_first[1], limit=2)
    assert newest_first[1:3] == await _ids(log, before=newest_first[3], limit=2)
    assert newest_first[:1] == await _ids(log, before=newest_first[1], limit=2)
    with pytest.raises(InvalidRequest):
        await _ids(log, after=uuid.uuid4())


async def test_repairs_and_details_are_the_database_operators_only(
    operator: OperatorHarness,  # noqa: F811 - the imported fixture
) -> None:
    log, api_log = _logs(operator)
    staff_id = await operator.add_identity("staff@example.com")
    await operator.admin.grant_staff("staff@example.com")
    note = dead_letter(operator, purpose=Purpose.NOTIFICATION, destination="dana@example.com")
    other = dead_letter(operator, purpose=Purpose.NOTIFICATION, destination="erin@example.com")
    for message in (note, other):
        await operator.put(message)
    retry_at = operator.now() + timedelta(minutes=1)
    failure = Retry(available_at=retry_at, failure_class=FailureClass.THROTTLED, detail="4.7.0 x")
    await operator.add_attempt(note.id, 1, failure, "smtp")
    copy = await operator.admin.requeue(
        actor=StaffActor(identity_id=staff_id),
        message_id=note.id,
        new_message_id=uuid.uuid4(),
        idempotency_key="k",
    )

    repairs = await log.repairs([note.id, other.id])
    [attempt] = await log.history(note.id)

    assert [note.id] == list(repairs)
    assert (RepairAction.REQUEUE, copy.message_id) == (
        repairs[note.id].action,
        repairs[note.id].message_id,
    )
    assert ("4.7.0 x", "THROTTLED", "smtp") == (
        attempt.detail,
        attempt.failure_class and attempt.failure_class.value,
        attempt.provider,
    )
    for refused in (
        api_log.messages(where=ANY, after=None, before=None, limit=1),
        api_log.repairs([note.id]),
        api_log.history(note.id),
    ):
        with pytest.raises(PermissionDenied):
            await refused
