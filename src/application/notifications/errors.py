"""Errors the notifications use cases raise."""

from __future__ import annotations

from outbox.application.errors import ApplicationError


class UnknownRecipient(ApplicationError):
    """The recipient directory knows no such recipient."""
