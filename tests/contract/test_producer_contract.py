"""The public producers and their doubles (outbox.testing) behave alike: each case runs on
``Producer`` and ``AsyncProducer`` against PostgreSQL (as ``outbox_producer``) and on
``RecordingProducer`` and ``AsyncRecordingProducer``."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol
from uuid import UUID

import attrs
import psycopg
import pytest

from outbox.adapters.crypto.keyring import generate_key, key_line
from outbox.producer import (
    AsyncProducer,
    Channel,
    IdempotencyConflict,
    InvalidDestination,
    InvalidDomainEvent,
    InvalidMessage,
    Producer,
    Purpose,
)
from outbox.testing import AsyncRecordingProducer, RecordingProducer
from tests.events_rows import SETUP

KEYS = key_line(generate_key("app-key"))
ORGANIZATION = uuid.UUID("0192f5a0-0000-7000-8000-000000000001")
WHEN = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)


class Harness(Protocol):
    """A producer under test and what it kept."""

    async def enqueue(self, **message: Any) -> UUID: ...
    async def append_event(self, **event: Any) -> UUID: ...
    async def withdrawn(self, message_id: UUID) -> bool | None: ...
    async def events(self) -> int: ...


@attrs.define
class Recording:
    """The doubles: what they kept is their own lists."""

    producer: RecordingProducer | AsyncRecordingProducer

    async def enqueue(self, **message: Any) -> UUID:
        answer = self.producer.enqueue(None, **message)
        return await answer if not isinstance(answer, UUID) else answer

    async def append_event(self, **event: Any) -> UUID:
        answer = self.producer.append_event(None, **event)
        return await answer if not isinstance(answer, UUID) else answer

    async def withdrawn(self, message_id: UUID) -> bool | None:
        found = [m.withdrawn for m in self.producer.messages if m.id == message_id]
        return found[0] if found else None

    async def events(self) -> int:
        return len(self.producer.events)


@attrs.define
class Real:
    """A real producer, each call in its own committed transaction as outbox_producer."""

    url: str
    producer: Producer | AsyncProducer

    async def _call(self, method: str, fields: dict[str, Any]) -> UUID:
        if isinstance(self.producer, Producer):
            with psycopg.connect(self.url) as sync, sync.transaction():
                sync.execute("SET LOCAL ROLE outbox_producer")
                answer: UUID = getattr(self.producer, method)(sync, **fields)
                return answer
        async with (
            await psycopg.AsyncConnection.connect(self.url) as conn,
            conn.transaction(),
        ):
            await conn.execute("SET LOCAL ROLE outbox_producer")
            called: UUID = await getattr(self.producer, method)(conn, **fields)
            return called

    async def enqueue(self, **message: Any) -> UUID:
        return await self._call("enqueue", message)

    async def append_event(self, **event: Any) -> UUID:
        return await self._call("append_event", event)

    async def withdrawn(self, message_id: UUID) -> bool | None:
        async with await psycopg.AsyncConnection.connect(self.url) as conn:
            cursor = await conn.execute(
                "SELECT dead_letter_reason FROM outbox.messages WHERE id = %s", (message_id,)
            )
            row = await cursor.fetchone()
        return None if row is None else row[0] == "superseded_by_resend"

    async def events(self) -> int:
        async with await psycopg.AsyncConnection.connect(self.url) as conn:
            cursor = await conn.execute("SELECT count(*) FROM events.domain_events")
            row = await cursor.fetchone()
        assert row is not None
        return int(row[0])


@pytest.fixture(
    params=[
        "recording",
        "async-recording",
        pytest.param("postgres", marks=pytest.mark.integration),
        pytest.param("async-postgres", marks=pytest.mark.integration),
    ]
)
def producer(request: pytest.FixtureRequest) -> Harness:
    """Each producer, able to seal secrets."""
    if request.param == "recording":
        return Recording(RecordingProducer())
    if request.param == "async-recording":
        return Recording(AsyncRecordingProducer())
    url = request.getfixturevalue("database_url")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(SETUP)
    kind = Producer if request.param == "postgres" else AsyncProducer
    return Real(url, kind.from_seal_keys(KEYS))


def code(subject: UUID, **overrides: Any) -> dict[str, Any]:
    """A sign-up code for ``subject``, valid ten minutes."""
    return {
        "purpose": Purpose.SIGN_UP,
        "channel": Channel.EMAIL,
        "destination": "ada@example.com",
        "template": "sign_up",
        "subject_id": subject,
        "secret": "123456",
        "expires_at": datetime.now(UTC) + timedelta(minutes=10),
        **overrides,
    }


def event(key: str = "order-1", **overrides: Any) -> dict[str, Any]:
    """The demo module's event (registered and published in the test database)."""
    return {
        "organization_id": ORGANIZATION,
        "event_type": "demo.thing_happened",
        "contract_version": 1,
        "aggregate_type": "thing",
        "aggregate_id": "t-1",
        "idempotency_key": key,
        "payload": {"n": 1},
        "occurred_at": WHEN,
        **overrides,
    }


async def test_a_code_is_kept_and_a_newer_one_for_its_subject_withdraws_it(
    producer: Harness,
) -> None:
    subject = uuid.uuid4()

    first = await producer.enqueue(**code(subject))
    second = await producer.enqueue(**code(subject))

    assert (True, False) == (await producer.withdrawn(first), await producer.withdrawn(second))


async def test_a_notification_needs_no_secret_and_withdraws_nothing(producer: Harness) -> None:
    subject = uuid.uuid4()
    notice = {
        "purpose": Purpose.NOTIFICATION,
        "channel": Channel.EMAIL,
        "destination": "ada@example.com",
        "template": "order_paid",
        "subject_id": subject,
        "params": {"order": "o-1"},
    }

    first = await producer.enqueue(**notice)
    second = await producer.enqueue(**notice)

    assert (False, False) == (await producer.withdrawn(first), await producer.withdrawn(second))


@pytest.mark.parametrize(
    ("overrides", "error"),
    [
        ({"secret": None}, InvalidMessage),  # a code without its code
        ({"expires_at": datetime.now(UTC) - timedelta(seconds=1)}, InvalidMessage),
        ({"template": ""}, InvalidMessage),
        ({"destination": "not an address"}, InvalidDestination),
        ({"purpose": Purpose.NOTIFICATION}, InvalidMessage),  # a notification with a secret
    ],
)
async def test_bad_messages_are_refused_before_anything_is_written(
    producer: Harness, overrides: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        await producer.enqueue(**code(uuid.uuid4(), **overrides))


async def test_an_event_appended_again_under_its_key_answers_the_first_id(
    producer: Harness,
) -> None:
    first = await producer.append_event(**event())
    again = await producer.append_event(**event())

    assert (first, 1) == (again, await producer.events())


async def test_an_event_key_reused_with_other_content_is_refused(producer: Harness) -> None:
    await producer.append_event(**event())

    with pytest.raises(IdempotencyConflict):
        await producer.append_event(**event(payload={"n": 2}))
    assert 1 == await producer.events()


@pytest.mark.parametrize(
    "overrides",
    [{"event_type": "NotDotted"}, {"contract_version": 0}, {"aggregate_type": ""}],
)
async def test_bad_events_are_refused_before_anything_is_written(
    producer: Harness, overrides: dict[str, Any]
) -> None:
    with pytest.raises(InvalidDomainEvent):
        await producer.append_event(**event(**overrides))
    assert 0 == await producer.events()
