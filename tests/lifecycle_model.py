"""The message lifecycle as a simple model, written from the lifecycle table
(docs/architecture.md) independently of the domain's code: the domain state machine
(tests/unit/domain/delivery/) and the stores' contract run (tests/contract/) check against it.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import attrs

from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import State
from outbox.domain.purposes import Purpose


def expiry_reason_of(purpose: Purpose) -> FailureClass:
    """The expiry wording, written out independently of the domain's helper."""
    if purpose is Purpose.INVITATION:
        return FailureClass.INVITATION_EXPIRED
    return FailureClass.CHALLENGE_EXPIRED


@attrs.define
class Expected:
    """What the lifecycle says one message should look like now."""

    purpose: Purpose
    subject: UUID | None
    expires_at: datetime | None
    available_at: datetime
    has_secret: bool
    state: State = State.PENDING
    attempts: int = 0
    token: UUID | None = None
    lease_until: datetime | None = None
    reason: FailureClass | None = None

    @property
    def live(self) -> bool:
        return self.state in (State.PENDING, State.LEASED)

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    def lease_live(self, now: datetime) -> bool:
        return (
            self.state is State.LEASED and self.lease_until is not None and now < self.lease_until
        )

    def claimable(self, now: datetime) -> bool:
        if self.state is State.PENDING:
            return self.available_at <= now
        return self.state is State.LEASED and not self.lease_live(now)

    def holds(self, token: UUID, now: datetime) -> bool:
        return self.lease_live(now) and self.token == token

    def finish(self, state: State, reason: FailureClass | None = None) -> None:
        self.state = state
        self.reason = reason
        self.token = None
        self.lease_until = None
        self.has_secret = False

    def back_to_pending(self, at: datetime) -> None:
        self.state = State.PENDING
        self.available_at = at
        self.token = None
        self.lease_until = None
