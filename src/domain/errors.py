"""Errors the domain raises when a rule is broken."""

from __future__ import annotations


class DomainError(Exception):
    """Base class of every rule the domain refuses to break."""


class InvalidTransition(DomainError):
    """The message's state does not allow the requested event."""


class LeaseLost(DomainError):
    """A result was offered under a lease that is no longer the live one (OX-W3)."""


class InvalidDestination(DomainError):
    """A destination is not a valid email address or E.164 phone number."""


class InvalidMessage(DomainError):
    """A message is missing what its purpose requires."""
