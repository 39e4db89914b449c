"""Checking a typed code against a challenge: consume, count a wrong try, or lock (SPEC §10)."""

from __future__ import annotations

import asyncio
from datetime import datetime

import attrs

from application.identity.errors import InvalidCode
from application.identity.ports import IdentityUnitOfWork
from application.ports import SecretHasher, Telemetry
from domain.identity.challenges import Challenge, ChallengePolicy
from domain.outbox.failures import FailureClass


@attrs.frozen(kw_only=True)
class ChallengeAnswers:
    """Applies one code to a challenge inside a unit of work."""

    hasher: SecretHasher
    telemetry: Telemetry
    policy: ChallengePolicy = attrs.field(factory=ChallengePolicy)

    async def consume(
        self, uow: IdentityUnitOfWork, challenge: Challenge | None, code: str, now: datetime
    ) -> Challenge:
        """Return the consumed challenge, its unsent messages cancelled (``challenge_consumed``).

        A wrong code is counted and committed before InvalidCode is raised; a missing,
        expired, consumed or locked challenge raises the same InvalidCode after the same
        hashing work, so the answer tells nothing about which it was.
        """
        if challenge is None or not challenge.is_open(now):
            await asyncio.to_thread(self.hasher.hash, code)
            raise InvalidCode
        correct = await asyncio.to_thread(self.hasher.verify, code, challenge.code_hash)
        answered = challenge.answer(correct=correct, now=now, policy=self.policy)
        await uow.identity.save_challenge(answered)
        if not answered.is_consumed:
            await uow.commit()
            self.telemetry.event(
                "identity.challenge.code_rejected",
                level="warning",
                challenge_id=str(answered.id),
                purpose=answered.purpose.value,
                failed_attempts=answered.failed_attempts,
                locked=not answered.is_open(now),
            )
            raise InvalidCode
        await uow.outbox.cancel_by_subject(
            subject_id=answered.id, reason=FailureClass.CHALLENGE_CONSUMED
        )
        self.telemetry.event(
            "identity.challenge.consumed",
            challenge_id=str(answered.id),
            purpose=answered.purpose.value,
        )
        return answered
