"""Errors the application layer raises; adapters translate driver errors into these."""

from __future__ import annotations


class ApplicationError(Exception):
    """Base class of every error a use case or port may raise on purpose."""


class EnvelopeInvalid(ApplicationError):
    """A sealed secret cannot be opened: wrong id or purpose, tampered, truncated or unknown key."""


class StoreUnavailable(ApplicationError):
    """The database cannot be reached or the operation hit a transient error; retry later."""

    def __init__(self, code: str = "") -> None:
        super().__init__(code)
        self.code = code


class PermissionDenied(ApplicationError):
    """The database role (or the acting identity) may not do this (SQLSTATE 42501)."""


class InvalidRequest(ApplicationError):
    """The caller's input breaks a rule; the message names the field and the rule."""


class InvalidField(ApplicationError):
    """One request field breaks a rule; ``field`` names it as the client sent it."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem
