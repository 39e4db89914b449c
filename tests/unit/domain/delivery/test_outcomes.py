"""Worker outcomes: which spend an attempt, and the expiry reason per purpose."""

from __future__ import annotations

import pytest

from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.outcomes import (
    DeadLetter,
    Outcome,
    Published,
    RecordResult,
    Release,
    Retry,
    expiry_reason,
)
from outbox.domain.purposes import Purpose
from tests.fakes.clock import EPOCH


@pytest.mark.parametrize(
    ("outcome", "counts"),
    [
        (Published(), True),
        (Retry(available_at=EPOCH, failure_class=FailureClass.THROTTLED), True),
        (DeadLetter(reason=FailureClass.REJECTED), True),
        (Release(available_at=EPOCH, failure_class=FailureClass.PROVIDER_SUSPENDED), False),
        (DeadLetter(reason=FailureClass.CHALLENGE_EXPIRED, attempted=False), False),
    ],
)
def test_only_a_tried_send_spends_an_attempt(outcome: Outcome, counts: bool) -> None:
    assert counts == outcome.counts_attempt


@pytest.mark.parametrize("purpose", list(Purpose))
def test_expiry_reason_is_invitation_expired_only_for_invitations(purpose: Purpose) -> None:
    expected = (
        FailureClass.INVITATION_EXPIRED
        if purpose is Purpose.INVITATION
        else FailureClass.CHALLENGE_EXPIRED
    )

    assert expected == expiry_reason(purpose)


def test_the_store_answers_recorded_or_lease_lost() -> None:
    assert {"recorded", "lease_lost"} == {str(r) for r in RecordResult}
