"""Whether a dead-lettered code may be reissued: its challenge must still be open."""

from __future__ import annotations

from datetime import datetime

from outbox.domain.delivery.dead_letters import Refusal
from outbox.domain.identity.challenges import Challenge, ChallengeState


def challenge_refusal(challenge: Challenge | None, now: datetime) -> Refusal | None:
    """Why a new code for ``challenge`` would be useless at ``now``, or None if it is open."""
    if challenge is None:
        return Refusal.CHALLENGE_MISSING
    if challenge.state is ChallengeState.CONSUMED:
        return Refusal.CHALLENGE_CONSUMED
    if challenge.state is ChallengeState.LOCKED:
        return Refusal.CHALLENGE_LOCKED
    if not challenge.is_open(now):
        return Refusal.CHALLENGE_EXPIRED
    return None
