"""The daily wrong-code budget: who spends which budget, and when it is exhausted."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from uuid import UUID

import pytest

from outbox.domain.identity.code_budgets import Audience, CodeBudget
from outbox.domain.purposes import Purpose

NOW = datetime(2026, 12, 1, 23, 59, tzinfo=UTC)


@pytest.mark.parametrize(
    ("purpose", "audience"),
    [
        (Purpose.SIGN_UP, Audience.ANYONE),
        (Purpose.PASSWORD_RECOVERY, Audience.ANYONE),
        (Purpose.STEP_UP, Audience.SESSION),
        (Purpose.ADD_SIGN_IN_METHOD, Audience.SESSION),
    ],
)
def test_codes_typed_without_a_session_spend_another_budget_than_those_inside_one(
    purpose: Purpose, audience: Audience
) -> None:
    assert audience == Audience.of(purpose)


def test_the_wrong_code_that_reaches_the_limit_exhausts_the_budget_at_that_moment() -> None:
    budget = CodeBudget(identity_id=UUID(int=1), audience=Audience.ANYONE, day=NOW.date())
    for _ in range(2):
        budget = budget.spend(now=NOW - timedelta(minutes=1), limit=3)
    assert not budget.is_exhausted

    exhausted = budget.spend(now=NOW, limit=3)

    assert (3, NOW) == (exhausted.wrong_codes, exhausted.exhausted_at)
    later = exhausted.spend(now=NOW + timedelta(seconds=1), limit=3)
    assert (4, NOW) == (later.wrong_codes, later.exhausted_at)


def test_the_day_is_the_utc_calendar_day() -> None:
    assert date(2026, 12, 1) == CodeBudget.day_of(NOW)
    assert date(2026, 12, 2) == CodeBudget.day_of(NOW + timedelta(minutes=1))
