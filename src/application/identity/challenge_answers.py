"""Checking a typed code against a challenge: consume, count a wrong try, or lock.

Every wrong code also spends the account's daily wrong-code budget (docs/identity.md,
domain/identity/code_budgets.py); once it is used up, every code of that audience is
refused until the day ends and the owner is sent a security notice.
"""

from __future__ import annotations

import asyncio
from datetime import datetime

import attrs

from outbox.application.identity.errors import InvalidCode
from outbox.application.identity.ports import IdentityUnitOfWork
from outbox.application.identity.security_notices import SecurityNotices
from outbox.application.ports import SecretHasher, Telemetry
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.identity.challenges import Challenge, ChallengePolicy
from outbox.domain.identity.code_budgets import Audience, CodeBudget
from outbox.domain.identity.security_changes import SecurityChange


@attrs.frozen(kw_only=True)
class ChallengeAnswers:
    """Applies one code to a challenge inside a unit of work."""

    hasher: SecretHasher
    telemetry: Telemetry
    notices: SecurityNotices
    policy: ChallengePolicy = attrs.field(factory=ChallengePolicy)

    async def consume(
        self, uow: IdentityUnitOfWork, challenge: Challenge | None, code: str, now: datetime
    ) -> Challenge:
        """Return the consumed challenge, its unsent messages cancelled (``challenge_consumed``).

        A wrong code is counted and committed before InvalidCode is raised; a missing,
        expired, consumed or locked challenge, or an account whose wrong-code budget is used
        up, raises the same InvalidCode after the same hashing work, so the answer tells
        nothing about which it was. A challenge the wrong code locks withdraws its unsent
        message (``challenge_locked``).
        """
        if challenge is None or not challenge.is_open(now):
            await asyncio.to_thread(self.hasher.hash, code)
            raise InvalidCode
        budget = await uow.identity.hold_code_budget(
            identity_id=challenge.identity_id,
            audience=Audience.of(challenge.purpose),
            day=CodeBudget.day_of(now),
        )
        if budget.is_exhausted:
            await asyncio.to_thread(self.hasher.hash, code)
            self.telemetry.event(
                "identity.challenge.budget_refused",
                level="warning",
                challenge_id=str(challenge.id),
                purpose=challenge.purpose.value,
            )
            raise InvalidCode
        correct = await asyncio.to_thread(self.hasher.verify, code, challenge.code_hash)
        answered = challenge.answer(correct=correct, now=now, policy=self.policy)
        await uow.identity.save_challenge(answered)
        if not answered.is_consumed:
            await self._wrong(uow, answered, budget, now)
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

    async def _wrong(
        self, uow: IdentityUnitOfWork, answered: Challenge, budget: CodeBudget, now: datetime
    ) -> None:
        """Count a wrong code on the challenge and the budget, and commit."""
        spent = budget.spend(now=now, limit=self.policy.wrong_codes_per_day)
        await uow.identity.save_code_budget(spent)
        if answered.is_locked:
            await uow.outbox.cancel_by_subject(
                subject_id=answered.id, reason=FailureClass.CHALLENGE_LOCKED
            )
        if spent.is_exhausted:
            await self.notices.send(
                uow,
                identity_id=answered.identity_id,
                change=SecurityChange.WRONG_CODE_BUDGET_EXHAUSTED,
                now=now,
            )
        await uow.commit()
        self.telemetry.event(
            "identity.challenge.code_rejected",
            level="warning",
            challenge_id=str(answered.id),
            purpose=answered.purpose.value,
            failed_attempts=answered.failed_attempts,
            locked=answered.is_locked,
        )
        if spent.is_exhausted:
            self.telemetry.event(
                "identity.challenge.budget_exhausted",
                level="warning",
                identity_id=str(answered.identity_id),
                audience=spent.audience.value,
            )
