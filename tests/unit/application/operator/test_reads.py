"""Backlog, dead-letter pages and message inspection with fakes."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from outbox.application.delivery.errors import MessageNotFound
from outbox.application.delivery.operations import (
    BacklogQuery,
    DeadLetterQuery,
    MessageQuery,
)
from outbox.application.errors import InvalidField
from outbox.application.staff import MAX_LIMIT, StaffRequired


async def test_backlog_names_the_actor_to_the_store(world):
    world.dead_letter()
    actor = world.staff()

    backlog = await world.messages.show_backlog(BacklogQuery(actor=actor))

    assert 1 == backlog.dead_lettered
    with pytest.raises(StaffRequired):
        await world.messages.show_backlog(BacklogQuery(actor=world.elevated(uuid.uuid4())))


async def test_the_first_page_says_whether_older_rows_follow(world):
    letters = [world.dead_letter(ago=timedelta(minutes=5 - i)) for i in range(3)]

    page = await world.messages.list_dead_letters(DeadLetterQuery(limit=2))

    assert [letters[2].id, letters[1].id] == [item.id for item in page.items]
    assert (True, False) == (page.has_older, page.has_newer)
    assert (letters[1].id, None) == (page.older_cursor, page.newer_cursor)


async def test_the_last_page_going_forward_has_no_older_rows_but_newer_ones(world):
    letters = [world.dead_letter(ago=timedelta(minutes=5 - i)) for i in range(3)]

    page = await world.messages.list_dead_letters(DeadLetterQuery(after=letters[1].id, limit=2))

    assert [letters[0].id] == [item.id for item in page.items]
    assert (False, True) == (page.has_older, page.has_newer)
    assert (None, letters[0].id) == (page.older_cursor, page.newer_cursor)


async def test_going_back_drops_the_row_beyond_the_page(world):
    letters = [world.dead_letter(ago=timedelta(minutes=5 - i)) for i in range(4)]

    page = await world.messages.list_dead_letters(DeadLetterQuery(before=letters[0].id, limit=2))

    assert [letters[2].id, letters[1].id] == [item.id for item in page.items]
    assert (True, True) == (page.has_older, page.has_newer)


async def test_an_empty_list_is_an_empty_page(world):
    page = await world.messages.list_dead_letters(DeadLetterQuery())

    assert ((), False, False) == (page.items, page.has_older, page.has_newer)


@pytest.mark.parametrize("limit", [0, MAX_LIMIT + 1])
async def test_a_limit_out_of_range_is_refused(world, limit):
    with pytest.raises(InvalidField) as invalid:
        await world.messages.list_dead_letters(DeadLetterQuery(limit=limit))
    assert "limit" == invalid.value.field


async def test_two_cursors_are_refused(world):
    with pytest.raises(InvalidField):
        await world.messages.list_dead_letters(
            DeadLetterQuery(after=uuid.uuid4(), before=uuid.uuid4())
        )


async def test_a_message_shows_masked(world):
    letter = world.dead_letter()

    detail = await world.messages.show_message(MessageQuery(message_id=letter.id))

    assert "p***@example.com" == detail.destination


async def test_an_unknown_message_is_not_found(world):
    with pytest.raises(MessageNotFound):
        await world.messages.show_message(MessageQuery(message_id=uuid.uuid4()))


async def test_observing_the_backlog_sets_every_state_gauge_and_the_age(world):
    world.dead_letter()

    await world.messages.observe_backlog()

    assert [
        ("outbox_messages", 0, {"state": "pending"}),
        ("outbox_messages", 0, {"state": "leased"}),
        ("outbox_messages", 0, {"state": "published"}),
        ("outbox_messages", 1, {"state": "dead_lettered"}),
        ("outbox_oldest_due_age_seconds", 0.0, {}),
    ] == world.telemetry.observations
