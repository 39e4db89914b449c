"""Challenges: resend, answers, lock after five wrong codes, expiry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest

from outbox.domain.channels import Channel
from outbox.domain.identity.challenges import Challenge, ChallengePolicy, ChallengeState
from outbox.domain.identity.errors import ChallengeNotOpen
from outbox.domain.purposes import Purpose

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
POLICY = ChallengePolicy()


def opened(purpose: Purpose = Purpose.SIGN_UP) -> Challenge:
    return Challenge.open(
        id=UUID(int=1),
        purpose=purpose,
        identity_id=UUID(int=2),
        identifier="a@example.com",
        channel=Channel.EMAIL,
        code_hash="hash-1",
        now=NOW,
        policy=POLICY,
    )


def test_a_challenge_lives_ten_minutes_by_default() -> None:
    challenge = opened()
    assert NOW + timedelta(minutes=10) == challenge.expires_at
    assert challenge.is_open(NOW + timedelta(minutes=9, seconds=59))
    assert not challenge.is_open(NOW + timedelta(minutes=10))


def test_only_one_time_code_purposes_open_challenges() -> None:
    with pytest.raises(ValueError, match="one-time codes"):
        opened(Purpose.INVITATION)


def test_a_resend_changes_the_code_and_restarts_the_lifetime_but_keeps_wrong_tries() -> None:
    challenge = opened().answer(correct=False, now=NOW, policy=POLICY)
    later = NOW + timedelta(minutes=4)

    resent = challenge.resend(code_hash="hash-2", now=later, policy=POLICY)

    assert "hash-2" == resent.code_hash
    assert later + timedelta(minutes=10) == resent.expires_at
    assert 1 == resent.failed_attempts
    assert challenge.id == resent.id


def test_the_right_code_consumes() -> None:
    answered = opened().answer(correct=True, now=NOW, policy=POLICY)
    assert ChallengeState.CONSUMED == answered.state
    assert NOW == answered.ended_at
    with pytest.raises(ChallengeNotOpen):
        answered.answer(correct=True, now=NOW, policy=POLICY)


def test_the_fifth_wrong_code_locks() -> None:
    challenge = opened()
    for _ in range(4):
        challenge = challenge.answer(correct=False, now=NOW, policy=POLICY)
        assert ChallengeState.OPEN == challenge.state
    challenge = challenge.answer(correct=False, now=NOW, policy=POLICY)
    assert ChallengeState.LOCKED == challenge.state
    with pytest.raises(ChallengeNotOpen):
        challenge.resend(code_hash="x", now=NOW, policy=POLICY)


def test_an_expired_challenge_takes_no_answer_and_no_resend() -> None:
    late = NOW + timedelta(minutes=10)
    with pytest.raises(ChallengeNotOpen):
        opened().answer(correct=True, now=late, policy=POLICY)
    with pytest.raises(ChallengeNotOpen):
        opened().resend(code_hash="x", now=late, policy=POLICY)
    assert ChallengeState.CLOSED == opened().close(late).state
