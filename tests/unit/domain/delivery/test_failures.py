"""The failure taxonomy and the decision each class leads to."""

from __future__ import annotations

from datetime import timedelta

import attrs
import pytest

from outbox.domain.delivery.failures import Decision, DeliveryFailure, FailureClass
from tests.fakes.clock import EPOCH

DECISIONS = {
    FailureClass.REJECTED: Decision.DEAD_LETTER,
    FailureClass.THROTTLED: Decision.RETRY,
    FailureClass.UNAVAILABLE: Decision.RETRY,
    FailureClass.INDETERMINATE: Decision.RETRY,
    FailureClass.PROVIDER_SUSPENDED: Decision.RELEASE,
    FailureClass.DECRYPTION_FAILED: Decision.DEAD_LETTER,
    FailureClass.UNEXPECTED_WORKER_ERROR: Decision.RETRY,
    FailureClass.LINK_UNCONFIGURED: Decision.RETRY,
    FailureClass.CHALLENGE_EXPIRED: Decision.DEAD_LETTER,
    FailureClass.INVITATION_EXPIRED: Decision.DEAD_LETTER,
    FailureClass.SUPERSEDED_BY_RESEND: Decision.DEAD_LETTER,
    FailureClass.CHALLENGE_CONSUMED: Decision.DEAD_LETTER,
    FailureClass.INVITATION_REVOKED: Decision.DEAD_LETTER,
    FailureClass.CHALLENGE_LOCKED: Decision.DEAD_LETTER,
    FailureClass.SUPPRESSED: Decision.DEAD_LETTER,
}


def test_the_taxonomy_has_exactly_the_specified_classes() -> None:
    assert set(DECISIONS) == set(FailureClass)


@pytest.mark.parametrize(("failure_class", "decision"), DECISIONS.items())
def test_each_class_leads_to_its_decision(failure_class: FailureClass, decision: Decision) -> None:
    assert decision == failure_class.decision


@pytest.mark.parametrize(
    ("failure_class", "stored"),
    [
        (FailureClass.REJECTED, "REJECTED"),
        (FailureClass.THROTTLED, "THROTTLED"),
        (FailureClass.UNAVAILABLE, "UNAVAILABLE"),
        (FailureClass.INDETERMINATE, "INDETERMINATE"),
        (FailureClass.PROVIDER_SUSPENDED, "PROVIDER_SUSPENDED"),
        (FailureClass.DECRYPTION_FAILED, "decryption_failed"),
        (FailureClass.UNEXPECTED_WORKER_ERROR, "unexpected_worker_error"),
        (FailureClass.LINK_UNCONFIGURED, "link_unconfigured"),
        (FailureClass.CHALLENGE_EXPIRED, "challenge_expired"),
        (FailureClass.INVITATION_EXPIRED, "invitation_expired"),
        (FailureClass.SUPERSEDED_BY_RESEND, "superseded_by_resend"),
        (FailureClass.CHALLENGE_CONSUMED, "challenge_consumed"),
        (FailureClass.INVITATION_REVOKED, "invitation_revoked"),
        (FailureClass.CHALLENGE_LOCKED, "challenge_locked"),
    ],
)
def test_each_class_stores_the_name_the_spec_gives_it(
    failure_class: FailureClass, stored: str
) -> None:
    assert stored == str(failure_class)
    assert failure_class is FailureClass(stored)


def test_only_decryption_failure_is_a_security_event() -> None:
    assert {FailureClass.DECRYPTION_FAILED} == {c for c in FailureClass if c.is_security_event}


def test_a_delivery_failure_defaults_to_no_code_and_no_retry_hint() -> None:
    failure = DeliveryFailure(failure_class=FailureClass.UNAVAILABLE)

    assert "" == failure.code
    assert failure.retry_after is None


def test_a_delivery_failure_carries_its_code_and_retry_hint_unchanged() -> None:
    hint = EPOCH + timedelta(seconds=90)
    failure = DeliveryFailure(failure_class=FailureClass.THROTTLED, code="429", retry_after=hint)

    assert (FailureClass.THROTTLED, "429", hint) == (
        failure.failure_class,
        failure.code,
        failure.retry_after,
    )
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        failure.code = "500"  # type: ignore[misc]
