"""The failure taxonomy and what each failure class decides.

A rejection dead-letters at once; throttled, unavailable and ambiguous (INDETERMINATE)
sends are retried: a duplicate code is harmless, while giving up on one that may have
arrived could lock the person out. A secret that will not open is dead-lettered at once
and reported to security monitoring.
"""

from __future__ import annotations

import enum
from datetime import datetime

import attrs


class Decision(enum.Enum):
    """What a failure means for the message that suffered it."""

    RETRY = "retry"  # counted attempt; wait the schedule (or Retry-After), dead-letter at the cap
    DEAD_LETTER = "dead_letter"  # terminal now
    RELEASE = "release"  # not the message's fault: back to pending, attempt not counted


class FailureClass(enum.StrEnum):
    """Every reason a message fails or is withdrawn; the value is what tables store."""

    # Provider outcomes (classified by each delivery adapter).
    REJECTED = "REJECTED"
    THROTTLED = "THROTTLED"
    UNAVAILABLE = "UNAVAILABLE"
    INDETERMINATE = "INDETERMINATE"
    PROVIDER_SUSPENDED = "PROVIDER_SUSPENDED"
    # Worker outcomes.
    DECRYPTION_FAILED = "decryption_failed"
    UNEXPECTED_WORKER_ERROR = "unexpected_worker_error"
    LINK_UNCONFIGURED = "link_unconfigured"
    # Lifecycle withdrawals.
    CHALLENGE_EXPIRED = "challenge_expired"
    INVITATION_EXPIRED = "invitation_expired"
    SUPERSEDED_BY_RESEND = "superseded_by_resend"
    CHALLENGE_CONSUMED = "challenge_consumed"
    INVITATION_REVOKED = "invitation_revoked"
    CHALLENGE_LOCKED = "challenge_locked"  # too many wrong codes: its code is useless now
    # A hard bounce or a complaint suppressed the destination: never sent.
    SUPPRESSED = "suppressed"

    @property
    def decision(self) -> Decision:
        """The decision this class leads to, before the attempt cap and expiry are applied."""
        return _DECISIONS[self]

    @property
    def is_security_event(self) -> bool:
        """Whether this failure must reach security monitoring (a secret that would not open)."""
        return self is FailureClass.DECRYPTION_FAILED


_DECISIONS = {
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


# The longest provider detail the attempt history keeps (the column's check says the same).
MAX_DETAIL = 200


@attrs.frozen(kw_only=True)
class DeliveryFailure:
    """A classified failure: its class, a short provider code, and the provider's retry hint.

    ``code`` is a short machine code (an SMTP reply code, an HTTP status, an AWS error
    code); it never holds free text from an exception. ``detail`` is what the provider said,
    already sanitised by its adapter (no address, no secret, at most ``MAX_DETAIL``
    characters), kept in the attempt history for operators.
    """

    failure_class: FailureClass
    code: str = ""
    retry_after: datetime | None = None
    detail: str = ""
