"""Retention: published rows 30 days, dead letters 90 days, live rows never."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from uuid import UUID

import pytest

from outbox.domain.channels import Channel
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import Message
from outbox.domain.delivery.outcomes import Published
from outbox.domain.delivery.retention import RetentionPolicy
from outbox.domain.purposes import Purpose
from tests.fakes.clock import EPOCH

POLICY = RetentionPolicy()
TOKEN = UUID(int=7)
DAY = timedelta(days=1)


def pending() -> Message:
    return Message.enqueue(
        id=UUID(int=1),
        purpose=Purpose.NOTIFICATION,
        channel=Channel.EMAIL,
        destination="alice@example.com",
        subject_id=None,
        template="welcome",
        now=EPOCH,
    )


def leased() -> Message:
    return pending().claim(owner="w", token=TOKEN, now=EPOCH, duration=timedelta(days=365))


def published() -> Message:
    return leased().record(token=TOKEN, outcome=Published(), now=EPOCH)


def dead_lettered() -> Message:
    return pending().cancel(FailureClass.CHALLENGE_CONSUMED, EPOCH)


def test_defaults_are_30_days_published_and_90_days_dead_lettered() -> None:
    assert timedelta(days=30) == POLICY.published
    assert timedelta(days=90) == POLICY.dead_lettered


def test_a_published_message_is_kept_30_days_after_publication() -> None:
    message = published()

    assert not POLICY.is_due(message, EPOCH + 30 * DAY - timedelta(microseconds=1))
    assert POLICY.is_due(message, EPOCH + 30 * DAY)


def test_a_dead_letter_is_kept_90_days_after_dead_lettering() -> None:
    message = dead_lettered()

    assert not POLICY.is_due(message, EPOCH + 90 * DAY - timedelta(microseconds=1))
    assert POLICY.is_due(message, EPOCH + 90 * DAY)


@pytest.mark.parametrize("make", [pending, leased])
def test_a_live_message_is_never_due(make: Callable[[], Message]) -> None:
    assert not POLICY.is_due(make(), EPOCH + 10_000 * DAY)


def test_retention_periods_are_configurable() -> None:
    policy = RetentionPolicy(published=DAY, dead_lettered=2 * DAY)

    assert policy.is_due(published(), EPOCH + DAY)
    assert not policy.is_due(dead_lettered(), EPOCH + DAY)
    assert policy.is_due(dead_lettered(), EPOCH + 2 * DAY)


def test_cutoffs_are_now_minus_each_period() -> None:
    now = EPOCH + 100 * DAY

    assert now - 30 * DAY == POLICY.published_cutoff(now)
    assert now - 90 * DAY == POLICY.dead_lettered_cutoff(now)
