"""Errors the identity rules raise: a challenge, link or invitation that cannot be used."""

from __future__ import annotations

from outbox.domain.errors import DomainError


class ChallengeNotOpen(DomainError):
    """The challenge is consumed, locked, closed or expired; it accepts no code and no resend."""


class TokenNotUsable(DomainError):
    """A magic link or invitation token is used up, revoked or expired."""


class WeakPassword(DomainError):
    """A new password breaks the password rule; the message says which part."""
