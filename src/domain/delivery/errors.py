"""Errors of the message lifecycle: a forbidden transition, a lost lease, a bad message."""

from __future__ import annotations

from outbox.domain.errors import DomainError


class InvalidTransition(DomainError):
    """The message's state does not allow the requested event."""


class LeaseLost(DomainError):
    """A result was offered under a lease that is no longer the live one: refused, never applied."""


class InvalidMessage(DomainError):
    """A message is missing what its purpose requires."""
