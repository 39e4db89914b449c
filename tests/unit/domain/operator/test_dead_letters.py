"""Which dead letters may be sent again, and why a challenge can refuse a new code."""

from __future__ import annotations

import uuid

import attrs
import pytest

from outbox.domain.channels import Channel
from outbox.domain.delivery.dead_letters import Refusal, is_delivery_failure
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.identity.challenges import Challenge, ChallengePolicy, ChallengeState
from outbox.domain.operator.dead_letters import challenge_refusal
from outbox.domain.purposes import Purpose
from tests.fakes.clock import EPOCH

WITHDRAWN = {
    FailureClass.CHALLENGE_EXPIRED,
    FailureClass.INVITATION_EXPIRED,
    FailureClass.SUPERSEDED_BY_RESEND,
    FailureClass.CHALLENGE_CONSUMED,
    FailureClass.INVITATION_REVOKED,
}


@pytest.mark.parametrize("reason", list(FailureClass))
def test_every_class_but_the_withdrawals_is_a_delivery_failure(reason):
    assert (reason not in WITHDRAWN) is is_delivery_failure(reason)


def _challenge(**changes: object) -> Challenge:
    opened = Challenge.open(
        id=uuid.uuid4(),
        purpose=Purpose.SIGN_UP,
        identity_id=uuid.uuid4(),
        identifier="person@example.com",
        channel=Channel.EMAIL,
        code_hash="$argon2id$x",
        now=EPOCH,
        policy=ChallengePolicy(),
    )
    return attrs.evolve(opened, **changes)


@pytest.mark.parametrize(
    ("challenge", "refusal"),
    [
        (None, Refusal.CHALLENGE_MISSING),
        (_challenge(state=ChallengeState.CONSUMED, ended_at=EPOCH), Refusal.CHALLENGE_CONSUMED),
        (_challenge(state=ChallengeState.LOCKED, ended_at=EPOCH), Refusal.CHALLENGE_LOCKED),
        (_challenge(state=ChallengeState.CLOSED, ended_at=EPOCH), Refusal.CHALLENGE_EXPIRED),
        (_challenge(expires_at=EPOCH), Refusal.CHALLENGE_EXPIRED),
        (_challenge(), None),
    ],
    ids=["missing", "consumed", "locked", "closed", "expired", "open"],
)
def test_only_an_open_unexpired_challenge_takes_a_new_code(challenge, refusal):
    assert refusal == challenge_refusal(challenge, EPOCH)
