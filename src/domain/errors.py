"""Errors the domain raises when a rule is broken."""

from __future__ import annotations


class DomainError(Exception):
    """Base class of every rule the domain refuses to break."""


class InvalidDestination(DomainError):
    """A destination is not a valid email address or E.164 phone number."""
