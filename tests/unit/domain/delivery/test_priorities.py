"""Priorities and the claim's order: highest first, a fair slot per batch, no starvation."""

from __future__ import annotations

import itertools
from datetime import timedelta
from uuid import UUID

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from outbox.domain.channels import Channel
from outbox.domain.delivery.errors import InvalidMessage
from outbox.domain.delivery.messages import Message
from outbox.domain.delivery.priorities import ClaimKey, Priority, claim_order, fair_slots
from outbox.domain.purposes import Purpose
from tests.fakes.clock import EPOCH


@attrs.frozen
class Row:
    """A claim candidate: when it became due, and how urgent it is."""

    number: int
    priority: Priority

    def key(self) -> ClaimKey:
        at = EPOCH + timedelta(seconds=self.number)
        return (at, at, UUID(int=self.number))


def _order(rows: list[Row], limit: int) -> list[Row]:
    return claim_order(rows, limit, key=Row.key, priority=lambda row: row.priority)


@pytest.mark.parametrize(
    ("limit", "slots"), [(1, 0), (2, 1), (9, 1), (10, 1), (11, 2), (100, 10), (101, 11)]
)
def test_one_slot_in_ten_rounded_up_is_fair_and_a_batch_of_one_has_none(
    limit: int, slots: int
) -> None:
    assert slots == fair_slots(limit)


@pytest.mark.parametrize(
    ("purpose", "priority"),
    [(purpose, Priority.HIGH) for purpose in Purpose if purpose is not Purpose.NOTIFICATION]
    + [(Purpose.NOTIFICATION, Priority.NORMAL)],
)
def test_every_secret_purpose_is_high_and_a_notification_normal(
    purpose: Purpose, priority: Priority
) -> None:
    assert priority == Priority.default_for(purpose)


def test_the_fair_slot_goes_to_the_oldest_and_the_rest_highest_first() -> None:
    rows = [Row(n, Priority.NORMAL) for n in range(20)] + [
        Row(20 + n, Priority.HIGH) for n in range(3)
    ]

    chosen = _order(rows, 10)

    assert [0, 20, 21, 22, 1, 2, 3, 4, 5, 6] == [row.number for row in chosen]


def test_a_batch_of_one_is_strictly_by_priority() -> None:
    assert [Row(1, Priority.HIGH)] == _order([Row(0, Priority.LOW), Row(1, Priority.HIGH)], 1)


@settings(deadline=None)  # each example simulates dozens of claims; a busy machine is slow
@given(
    limit=st.integers(min_value=2, max_value=30),
    arrivals=st.integers(min_value=1, max_value=50),
    position=st.integers(min_value=0, max_value=40),
)
def test_no_message_waits_longer_than_its_place_in_the_oldest_first_order(
    limit: int, arrivals: int, position: int
) -> None:
    """A low message with ``position`` older messages ahead of it, while more high messages
    than a batch arrive before every claim, is taken within position // fair slots + 1
    claims: the high flood cannot starve it."""
    numbers = itertools.count()
    waiting = [Row(next(numbers), Priority.HIGH) for _ in range(position)]
    low = Row(next(numbers), Priority.LOW)
    waiting.append(low)
    claims = 0
    while low in waiting:
        waiting.extend(Row(next(numbers), Priority.HIGH) for _ in range(limit + arrivals))
        taken = _order(waiting, limit)
        waiting = [row for row in waiting if row not in taken]
        claims += 1

    assert claims <= position // fair_slots(limit) + 1


def _message(**changes: object) -> Message:
    arguments: dict[str, object] = {
        "id": UUID(int=1),
        "purpose": Purpose.SIGN_UP,
        "channel": Channel.EMAIL,
        "destination": "alice@example.com",
        "subject_id": UUID(int=2),
        "template": "sign_up",
        "now": EPOCH,
        "sealed_secret": "v1.sealed-envelope",
        "expires_at": EPOCH + timedelta(minutes=10),
    } | changes
    return Message.enqueue(**arguments)  # type: ignore[arg-type]


def test_enqueue_takes_the_purpose_default_or_the_producer_priority() -> None:
    assert Priority.HIGH == _message().priority
    assert Priority.LOW == _message(priority=Priority.LOW).priority


def test_a_delayed_message_is_available_at_not_before_and_a_past_one_now() -> None:
    later = EPOCH + timedelta(minutes=5)

    delayed = _message(not_before=later)
    past = _message(not_before=EPOCH - timedelta(days=1))

    assert (later, True) == (delayed.available_at, delayed.is_delayed)
    assert (EPOCH, False) == (past.available_at, past.is_delayed)


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"priority": 3}, "priority: expected 0 (low), 1 (normal) or 2 (high)"),
        (
            {"not_before": EPOCH + timedelta(minutes=10)},
            "not_before: the message would expire before it may be sent",
        ),
        (
            {"not_before": EPOCH.replace(tzinfo=None)},
            "not_before: a delayed send names its time zone",
        ),
    ],
)
def test_a_bad_priority_or_not_before_is_refused_with_its_name(
    changes: dict[str, object], reason: str
) -> None:
    with pytest.raises(InvalidMessage) as caught:
        _message(**changes)
    assert reason == str(caught.value)
