"""Errors of outbox delivery: a provider refused, a message exists or is missing, a template."""

from __future__ import annotations

from outbox.application.errors import ApplicationError
from outbox.domain.delivery.dead_letters import Refusal
from outbox.domain.delivery.failures import DeliveryFailure


class DeliveryFailed(ApplicationError):
    """A provider did not accept a message; ``failure`` says why in the taxonomy's terms."""

    def __init__(self, failure: DeliveryFailure) -> None:
        super().__init__(failure.failure_class.value, failure.code)
        self.failure = failure


class DuplicateMessage(ApplicationError):
    """A message with this id already exists."""


class MessageNotFound(ApplicationError):
    """No message has this id."""


class TemplateNotFound(ApplicationError):
    """No template exists for this name and channel in any locale of the fallback chain."""


class TemplateRenderFailed(ApplicationError):
    """A template exists but cannot render: a missing parameter, bad syntax or an unsafe call."""


class DeadLetterRefused(ApplicationError):
    """The dead letter may not be reissued or requeued; ``refusal`` says why."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.value)
        self.refusal = refusal
