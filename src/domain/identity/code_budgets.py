"""The daily budget of wrong codes an account may receive across all its challenges.

Each challenge locks after a few wrong codes, but a new challenge can always be opened, so
without a budget a guesser gets a few tries per challenge for ever. The budget caps the
wrong codes per account and calendar day (UTC): the wrong code that uses it up exhausts it,
and until the day ends every code for that account is refused, the right one too.

Codes typed without a session (sign-up, password recovery) and codes typed inside one
(step-up, adding a sign-in method) spend separate budgets, so an outsider who exhausts the
first cannot stop the signed-in owner from stepping up.
"""

from __future__ import annotations

import enum
from datetime import date, datetime
from uuid import UUID

import attrs

from outbox.domain.purposes import Purpose


class Audience(enum.StrEnum):
    """Who can type a code of a purpose: anyone who knows the address, or a signed-in caller."""

    ANYONE = "anyone"
    SESSION = "session"

    @classmethod
    def of(cls, purpose: Purpose) -> Audience:
        """The audience whose budget a wrong code of ``purpose`` spends."""
        if purpose in (Purpose.SIGN_UP, Purpose.PASSWORD_RECOVERY):
            return cls.ANYONE
        return cls.SESSION


@attrs.frozen(kw_only=True)
class CodeBudget:
    """The wrong codes one account received from one audience on one day."""

    identity_id: UUID
    audience: Audience
    day: date
    wrong_codes: int = 0
    exhausted_at: datetime | None = None

    @staticmethod
    def day_of(now: datetime) -> date:
        """The budget's day for ``now`` (a UTC calendar day)."""
        return now.date()

    @property
    def is_exhausted(self) -> bool:
        """Whether every code of this audience is refused for the rest of the day."""
        return self.exhausted_at is not None

    def spend(self, *, now: datetime, limit: int) -> CodeBudget:
        """One more wrong code; the ``limit``-th exhausts the budget at ``now``."""
        wrong = self.wrong_codes + 1
        if self.exhausted_at is None and wrong >= limit:
            return attrs.evolve(self, wrong_codes=wrong, exhausted_at=now)
        return attrs.evolve(self, wrong_codes=wrong)
