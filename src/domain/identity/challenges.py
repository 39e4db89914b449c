"""Verification challenges: a hashed one-time code, its expiry and the wrong tries it allows."""

from __future__ import annotations

import enum
from datetime import datetime, timedelta
from uuid import UUID

import attrs

from outbox.domain.channels import Channel
from outbox.domain.identity.errors import ChallengeNotOpen
from outbox.domain.purposes import Purpose


class ChallengeState(enum.StrEnum):
    """Where a challenge is; only an open one accepts a code or a resend."""

    OPEN = "open"
    CONSUMED = "consumed"  # the right code arrived
    LOCKED = "locked"  # too many wrong codes
    CLOSED = "closed"  # replaced after it expired


@attrs.frozen(kw_only=True)
class ChallengePolicy:
    """How long a challenge lives, how many wrong codes lock it, and how long its code is."""

    lifetime: timedelta = timedelta(minutes=10)
    max_failed_attempts: int = 5
    code_digits: int = 6
    # Wrong codes per account, audience and UTC day across challenges (code_budgets.py).
    wrong_codes_per_day: int = 20


@attrs.frozen(kw_only=True)
class Challenge:
    """A one-time code sent to ``identifier`` for ``purpose``; the code is kept only as a hash.

    ``identity_id`` is the identity the challenge acts for (the one signing up, adding an
    identifier, recovering a password or stepping up).
    """

    id: UUID
    purpose: Purpose
    identity_id: UUID
    identifier: str = attrs.field(repr=False)
    channel: Channel
    code_hash: str = attrs.field(repr=False)
    failed_attempts: int = 0
    state: ChallengeState = ChallengeState.OPEN
    created_at: datetime
    expires_at: datetime
    ended_at: datetime | None = None

    @classmethod
    def open(
        cls,
        *,
        id: UUID,  # noqa: A002 - the challenge's own id is its natural name
        purpose: Purpose,
        identity_id: UUID,
        identifier: str,
        channel: Channel,
        code_hash: str,
        now: datetime,
        policy: ChallengePolicy,
    ) -> Challenge:
        """Open a challenge that expires one lifetime from ``now``."""
        if not purpose.is_one_time_code:
            raise ValueError(f"{purpose} does not use one-time codes")
        return cls(
            id=id,
            purpose=purpose,
            identity_id=identity_id,
            identifier=identifier,
            channel=channel,
            code_hash=code_hash,
            created_at=now,
            expires_at=now + policy.lifetime,
        )

    def is_open(self, now: datetime) -> bool:
        """Whether the challenge still accepts a code (or a resend) at ``now``."""
        return self.state is ChallengeState.OPEN and now < self.expires_at

    def resend(self, *, code_hash: str, now: datetime, policy: ChallengePolicy) -> Challenge:
        """The same challenge with a new code and a fresh lifetime; wrong tries still count."""
        self._require_open(now)
        return attrs.evolve(self, code_hash=code_hash, expires_at=now + policy.lifetime)

    def answer(self, *, correct: bool, now: datetime, policy: ChallengePolicy) -> Challenge:
        """Apply one typed code: consumed when right, else one more wrong try (maybe locking)."""
        self._require_open(now)
        if correct:
            return attrs.evolve(self, state=ChallengeState.CONSUMED, ended_at=now)
        failed = self.failed_attempts + 1
        if failed >= policy.max_failed_attempts:
            return attrs.evolve(
                self, failed_attempts=failed, state=ChallengeState.LOCKED, ended_at=now
            )
        return attrs.evolve(self, failed_attempts=failed)

    def close(self, now: datetime) -> Challenge:
        """End an open challenge that expired, so a new one may take its place."""
        if self.state is not ChallengeState.OPEN:
            raise ChallengeNotOpen(f"a {self.state} challenge cannot be closed")
        return attrs.evolve(self, state=ChallengeState.CLOSED, ended_at=now)

    @property
    def is_consumed(self) -> bool:
        """Whether the right code was typed."""
        return self.state is ChallengeState.CONSUMED

    @property
    def is_locked(self) -> bool:
        """Whether too many wrong codes ended it."""
        return self.state is ChallengeState.LOCKED

    def _require_open(self, now: datetime) -> None:
        if not self.is_open(now):
            raise ChallengeNotOpen(f"the challenge is {self.state} or expired")
