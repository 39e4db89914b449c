"""Which dead letters staff may send again, and the reasons they may not."""

from __future__ import annotations

import enum

from outbox.domain.delivery.failures import FailureClass


class Refusal(enum.StrEnum):
    """Why a reissue or requeue is refused; the value is what the SQL functions answer."""

    NOT_DEAD_LETTERED = "not_dead_lettered"
    NOT_REISSUABLE = "not_reissuable"  # no one-time code: invitation, magic link, notification
    NOT_REQUEUEABLE = "not_requeueable"  # only notifications are requeued as copies
    NOT_A_DELIVERY_FAILURE = "not_a_delivery_failure"  # withdrawn: nothing to fix by resending
    CHALLENGE_MISSING = "challenge_missing"
    OWN_CHALLENGE = "own_challenge"  # staff never reissue a code of their own challenge
    CHALLENGE_EXPIRED = "challenge_expired"
    CHALLENGE_CONSUMED = "challenge_consumed"
    CHALLENGE_LOCKED = "challenge_locked"
    NEWER_MESSAGE_EXISTS = "newer_message_exists"  # the person has, or will get, a newer code
    ALREADY_REQUEUED = "already_requeued"
    # No provider sends the message's channel (the settings say so): the copy would
    # dead-letter at once. Decided in Python, from the settings, before anything changes.
    NO_PROVIDER = "no_provider"


# Dead letters that are not delivery failures: a resend, a use, an expiry or a revocation
# withdrew them, so sending again would fix nothing.
WITHDRAWALS = frozenset(
    {
        FailureClass.CHALLENGE_EXPIRED,
        FailureClass.INVITATION_EXPIRED,
        FailureClass.SUPERSEDED_BY_RESEND,
        FailureClass.CHALLENGE_CONSUMED,
        FailureClass.INVITATION_REVOKED,
    }
)


def is_delivery_failure(reason: FailureClass) -> bool:
    """Whether a dead letter failed on its way to the person (and may be sent again)."""
    return reason not in WITHDRAWALS
