"""Errors the application layer raises; adapters translate driver errors into these."""

from __future__ import annotations

from domain.failures import DeliveryFailure


class ApplicationError(Exception):
    """Base class of every error a use case or port may raise on purpose."""


class EnvelopeInvalid(ApplicationError):
    """A sealed secret cannot be opened: wrong id or purpose, tampered, truncated or unknown key."""


class DeliveryFailed(ApplicationError):
    """A provider did not accept a message; ``failure`` says why in the taxonomy's terms."""

    def __init__(self, failure: DeliveryFailure) -> None:
        super().__init__(failure.failure_class.value, failure.code)
        self.failure = failure


class StoreUnavailable(ApplicationError):
    """The database cannot be reached or the operation hit a transient error; retry later."""

    def __init__(self, code: str = "") -> None:
        super().__init__(code)
        self.code = code


class PermissionDenied(ApplicationError):
    """The database role (or the acting identity) may not do this (SQLSTATE 42501)."""


class DuplicateMessage(ApplicationError):
    """A message with this id already exists."""


class MessageNotFound(ApplicationError):
    """No message has this id."""


class InvalidRequest(ApplicationError):
    """The caller's input breaks a rule; the message names the field and the rule."""


class TemplateNotFound(ApplicationError):
    """No template exists for this name and channel in any locale of the fallback chain."""


class TemplateRenderFailed(ApplicationError):
    """A template exists but cannot render: a missing parameter, bad syntax or an unsafe call."""
