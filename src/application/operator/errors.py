"""Errors the operator use cases and the operator store raise; entry points map each one."""

from __future__ import annotations

from outbox.application.errors import ApplicationError, PermissionDenied
from outbox.domain.operator.dead_letters import Refusal


class StaffRequired(PermissionDenied):
    """The acting identity is not an active staff member (SQLSTATE 42501 at the database).

    With no identity at all, the caller is not the database operator.
    """


class StepUpRequired(ApplicationError):
    """The staff action needs a fresh step-up: an active elevation token of this session."""


class DeadLetterRefused(ApplicationError):
    """The dead letter may not be reissued or requeued; ``refusal`` says why."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.value)
        self.refusal = refusal


class IdempotencyKeyReused(ApplicationError):
    """The idempotency key already named a different request of the same staff member."""


class RequestInProgress(ApplicationError):
    """A request with the same idempotency key is being handled right now; retry later."""


class StaffIdentityNotFound(ApplicationError):
    """No identity has this verified e-mail address."""


class EventRepairRefused(ApplicationError):
    """The dead letter was already resolved; ``resolution`` says how (released, republished)."""

    def __init__(self, resolution: str) -> None:
        super().__init__(resolution)
        self.resolution = resolution


class DeadLetterNotFound(ApplicationError):
    """No dead letter of the tenant events outbox has this id."""


class EventNotFound(ApplicationError):
    """No tenant event has this id (or it was deleted by retention)."""
