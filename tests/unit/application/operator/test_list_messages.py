"""The database operator's message list on the fakes: what a query may ask, and a destination
searched by its digest."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta

import pytest

from outbox.application.delivery.message_filters import MessageFilter, destination_digest
from outbox.application.delivery.operations import MessageListQuery as MessageQuery
from outbox.application.delivery.views import MessagePage
from outbox.application.errors import InvalidField, InvalidRequest
from outbox.domain.purposes import Purpose
from tests.contract.operator_harness import MemoryOperatorHarness, code_message
from tests.unit.application.operator.world import messages_over


def _use_case(harness: MemoryOperatorHarness) -> Callable[[MessageQuery], Awaitable[MessagePage]]:
    return messages_over(harness.admin).list_messages


@pytest.mark.parametrize(
    ("query", "field"),
    [
        (MessageQuery(limit=0), "limit"),
        (MessageQuery(limit=501), "limit"),
        (MessageQuery(destination="not an address"), "destination"),
    ],
)
async def test_a_bad_query_names_its_field(query: MessageQuery, field: str) -> None:
    with pytest.raises(InvalidField) as raised:
        await _use_case(MemoryOperatorHarness())(query)

    assert field == raised.value.field


async def test_an_empty_time_range_two_cursors_and_an_unknown_cursor_are_refused() -> None:
    harness = MemoryOperatorHarness()
    now = harness.now()
    message = code_message(harness)

    with pytest.raises(InvalidField, match="later than since"):
        await _use_case(harness)(MessageQuery(where=MessageFilter(since=now, until=now)))
    with pytest.raises(InvalidField, match="either after or before"):
        await _use_case(harness)(MessageQuery(after=message.id, before=message.id))
    with pytest.raises(InvalidRequest, match="cursor"):
        await _use_case(harness)(MessageQuery(after=message.id))  # never stored


async def test_a_destination_is_searched_by_the_digest_of_its_stored_spelling() -> None:
    harness = MemoryOperatorHarness()
    stored = code_message(
        harness, purpose=Purpose.NOTIFICATION, destination="dana@example.com", age=timedelta(0)
    )
    await harness.put(stored)

    page = await _use_case(harness)(MessageQuery(destination="  dana@EXAMPLE.com "))

    assert [stored.id] == [item.id for item in page.items]
    assert ["d***@example.com"] == [item.destination for item in page.items]


def test_a_filter_never_shows_the_digest_it_carries() -> None:
    where = MessageFilter(destination_digest=destination_digest("dana@example.com"))

    assert where.destination_digest is not None
    assert where.destination_digest not in repr(where)
