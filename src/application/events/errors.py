"""Errors of the events outbox a producer or an operator can act on."""

from __future__ import annotations

from outbox.application.errors import ApplicationError


class IdempotencyConflict(ApplicationError):
    """The idempotency key was used before, for an event with other content (SQLSTATE OXE01)."""


class EventTypeRetired(ApplicationError):
    """The event type is retired: it takes no new events (SQLSTATE OXE02)."""


class ContractVersionUnpublished(ApplicationError):
    """The event type is unknown, or the contract version is not published (SQLSTATE OXE03)."""


class ConsumerPaused(ApplicationError):
    """The consumer is paused: its deliveries wait and none may complete (SQLSTATE OXE04)."""


class EventRepairRefused(ApplicationError):
    """The dead letter was already resolved; ``resolution`` says how (released, republished)."""

    def __init__(self, resolution: str) -> None:
        super().__init__(resolution)
        self.resolution = resolution


class DeadLetterNotFound(ApplicationError):
    """No dead letter of the tenant events outbox has this id."""


class EventNotFound(ApplicationError):
    """No tenant event has this id (or it was deleted by retention)."""
