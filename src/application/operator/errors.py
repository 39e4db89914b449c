"""Errors of the operator's own use cases; the staff errors every context shares are in
outbox.application.staff."""

from __future__ import annotations

from outbox.application.errors import ApplicationError
from outbox.domain.operator.dead_letters import Refusal


class DeadLetterRefused(ApplicationError):
    """The dead letter may not be reissued or requeued; ``refusal`` says why."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.value)
        self.refusal = refusal


class StaffIdentityNotFound(ApplicationError):
    """No identity has this verified e-mail address."""
