"""Errors the identity use cases raise; the HTTP entry point maps each to a problem type."""

from __future__ import annotations

from datetime import timedelta

from outbox.application.errors import ApplicationError


class InvalidCredentials(ApplicationError):
    """The identifier and password do not name a verified account (one answer for both)."""


class Unauthenticated(ApplicationError):
    """No bearer token, or one that names no active session."""


class StepUpRequired(ApplicationError):
    """The action needs a fresh step-up: an active elevation token of the caller's session."""


class InvalidCode(ApplicationError):
    """The code is wrong, or no open challenge matches (one answer for every reason)."""


class InvalidToken(ApplicationError):
    """The magic-link or invitation token is unknown, used, revoked or expired."""


class MissingPermission(ApplicationError):
    """The signed-in identity lacks the organization permission the action needs."""

    def __init__(self, permission: str) -> None:
        super().__init__(permission)
        self.permission = permission


class NotFound(ApplicationError):
    """The named organization or invitation does not exist (for this caller)."""


class IdentifierTaken(ApplicationError):
    """Another identity holds this identifier verified."""


class InvitationNotPending(ApplicationError):
    """The invitation was already accepted or revoked."""


class InvitationForAnotherAddress(ApplicationError):
    """The invitation names an address the signed-in account does not hold verified."""


class InvitationLimitReached(ApplicationError):
    """The organization has as many pending invitations as it may."""


class RateLimited(ApplicationError):
    """Too many requests for this key in the current window; ``retry_after`` says how long."""

    def __init__(self, retry_after: timedelta) -> None:
        super().__init__(int(retry_after.total_seconds()))
        self.retry_after = retry_after


class Conflict(ApplicationError):
    """A concurrent request changed the same rows; trying again may succeed."""
