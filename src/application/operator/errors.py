"""Errors of the operator's own use cases; the staff errors every context shares are in
outbox.application.staff."""

from __future__ import annotations

from outbox.application.errors import ApplicationError


class StaffIdentityNotFound(ApplicationError):
    """No identity has this verified e-mail address."""


class NotStaff(ApplicationError):
    """The identity is not an active staff member."""
