"""The inbox's store behaves alike in memory (outbox.testing) and in PostgreSQL: one receipt
per event and consumer, a failing handler leaves none, dead letters kept and replayed once."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from outbox.adapters.postgres.inbox_store import PostgresInboxStore
from outbox.adapters.postgres.pool import open_pool
from outbox.application.events.inbox_ports import InboxDeadLetter, InboxEvent, InboxStore
from outbox.testing import InMemoryInboxStore, inbox_event

CONSUMER = "shop-fulfilment"


@pytest.fixture(params=["memory", pytest.param("postgres", marks=pytest.mark.integration)])
def store_kind(request: pytest.FixtureRequest) -> str | None:
    """None for the in-memory store, else the test database's URL."""
    return None if request.param == "memory" else request.getfixturevalue("database_url")


@pytest.fixture
async def store(store_kind: str | None) -> AsyncIterator[InboxStore]:
    """The store under test (PostgreSQL: pooled connections acting as inbox_consumer)."""
    if store_kind is None:
        yield InMemoryInboxStore()
        return
    pool = await open_pool(store_kind, min_size=1, max_size=2, role="inbox_consumer")
    try:
        yield PostgresInboxStore(pool)
    finally:
        await pool.close()


class Handler:
    """Keeps the events it was given; raises when told to."""

    def __init__(self, *, fails: bool = False) -> None:
        self.seen: list[uuid.UUID] = []
        self.fails = fails

    async def __call__(self, event: InboxEvent, transaction: Any) -> None:
        self.seen.append(event.event_id)
        if self.fails:
            raise LookupError("no such order")


async def test_an_event_is_handled_once_per_consumer(store: InboxStore) -> None:
    event = inbox_event("sales.order_placed", {"order": 1})
    handler = Handler()

    answers = [
        await store.handle_once(CONSUMER, event, handler),
        await store.handle_once(CONSUMER, event, handler),
        await store.handle_once("another-consumer", event, handler),
    ]

    assert ([True, False, True], [event.event_id, event.event_id]) == (answers, handler.seen)


async def test_a_failing_handler_leaves_no_receipt(store: InboxStore) -> None:
    event = inbox_event("sales.order_placed", {"order": 1})

    with pytest.raises(LookupError):
        await store.handle_once(CONSUMER, event, Handler(fails=True))

    assert await store.handle_once(CONSUMER, event, Handler())
    assert [event.event_id] == [r.event_id for r in await store.receipts(CONSUMER, limit=10)]


async def test_a_dead_letter_is_kept_and_replayed_once(store: InboxStore) -> None:
    event = inbox_event("sales.order_placed", {"order": 1})
    await store.dead_letter(
        CONSUMER,
        event_id=event.event_id,
        subject=event.subject,
        headers=event.headers,
        data=event.data,
        attempts=5,
        error_class="LookupError",
    )
    [kept] = await store.dead_letters(CONSUMER, limit=10)
    replayed: list[InboxDeadLetter] = []

    async def handle(letter: InboxDeadLetter, transaction: Any) -> None:
        replayed.append(letter)

    before = await store.replay_one(CONSUMER, handle)  # not marked yet
    marked = await store.request_replay(CONSUMER, event.event_id)
    taken = await store.replay_one(CONSUMER, handle)
    again = await store.replay_one(CONSUMER, handle)

    assert (event.data, 5, "LookupError", None) == (
        kept.data,
        kept.attempts,
        kept.error_class,
        kept.replay_requested_at,
    )
    assert (None, True, None) == (before, marked, again)
    assert taken is not None
    assert [event.event_id] == [letter.event_id for letter in replayed]
    assert [] == list(await store.dead_letters(CONSUMER, limit=10))
    assert not await store.request_replay(CONSUMER, event.event_id)
    assert not await store.handle_once(CONSUMER, event, Handler())  # the replay's receipt
