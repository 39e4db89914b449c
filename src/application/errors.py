"""Errors the application layer raises; adapters translate driver errors into these."""

from __future__ import annotations


class ApplicationError(Exception):
    """Base class of every error a use case or port may raise on purpose."""


class EnvelopeInvalid(ApplicationError):
    """A sealed secret cannot be opened: wrong id or purpose, tampered, truncated or unknown key."""


class StoreUnavailable(ApplicationError):
    """The database cannot be reached or the operation hit a transient error; retry later.

    ``hint`` tells an operator what to change when the cause is known to be theirs.
    """

    hint = ""

    def __init__(self, code: str = "") -> None:
        super().__init__(code)
        self.code = code


class StoreNotMigrated(StoreUnavailable):
    """The database lacks the schema this code needs: its migrations are not applied."""

    hint = "run `outboxctl db migrate`"


class RoleMissing(StoreUnavailable):
    """The role this process acts as does not exist, or its login is not a member of it."""

    def __init__(self, role: str) -> None:
        super().__init__("42704")
        self.role = role
        self.hint = (
            f"grant {role} to the login role, or run `outboxctl db migrate` (it creates the roles)"
        )


class PreparedStatementsUnsupported(StoreUnavailable):
    """A connection pooler in transaction mode lost a prepared statement (PgBouncer < 1.21)."""

    hint = (
        "a connection pooler (PgBouncer before 1.21) does not keep prepared statements:"
        " set OUTBOX_DB_PREPARED_STATEMENTS=false (psycopg prepare_threshold=None),"
        " or PgBouncer's max_prepared_statements"
    )


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
