"""What a worker can record for a leased message, and what the store answers."""

from __future__ import annotations

import enum
from datetime import datetime

import attrs

from outbox.domain.delivery.failures import FailureClass
from outbox.domain.purposes import Purpose


@attrs.frozen(kw_only=True)
class Published:
    """The provider accepted the message; ``provider_message_id`` is its receipt, if any."""

    provider_message_id: str = ""

    @property
    def counts_attempt(self) -> bool:
        """Whether this outcome spends one of the message's attempts."""
        return True


@attrs.frozen(kw_only=True)
class Retry:
    """A retryable failure: back to pending until ``available_at``."""

    available_at: datetime
    failure_class: FailureClass
    code: str = ""
    detail: str = ""  # the provider's sanitised reason

    @property
    def counts_attempt(self) -> bool:
        """Whether this outcome spends one of the message's attempts."""
        return True


@attrs.frozen(kw_only=True)
class Release:
    """Not the message's fault (a suspended provider): back to pending, attempt not spent."""

    available_at: datetime
    failure_class: FailureClass
    code: str = ""
    detail: str = ""  # the provider's sanitised reason

    @property
    def counts_attempt(self) -> bool:
        """Whether this outcome spends one of the message's attempts."""
        return False


@attrs.frozen(kw_only=True)
class DeadLetter:
    """A terminal failure; ``attempted`` is False when no send was tried (pre-send expiry)."""

    reason: FailureClass
    code: str = ""
    attempted: bool = True
    detail: str = ""  # the provider's sanitised reason

    @property
    def counts_attempt(self) -> bool:
        """Whether this outcome spends one of the message's attempts."""
        return self.attempted


Outcome = Published | Retry | Release | DeadLetter


class RecordResult(enum.StrEnum):
    """The store's answer to one recorded outcome."""

    RECORDED = "recorded"
    LEASE_LOST = "lease_lost"  # stale token, expired lease, wrong attempt or already final


def expiry_reason(purpose: Purpose) -> FailureClass:
    """The dead-letter reason of a message whose secret outlived its subject."""
    if purpose is Purpose.INVITATION:
        return FailureClass.INVITATION_EXPIRED
    return FailureClass.CHALLENGE_EXPIRED
