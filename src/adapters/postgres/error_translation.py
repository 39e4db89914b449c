"""Translates psycopg errors into the application's errors, keeping only safe text."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import errors as pg_errors

from outbox.application.delivery.errors import DuplicateMessage
from outbox.application.errors import (
    ApplicationError,
    InvalidRequest,
    PermissionDenied,
    PreparedStatementsUnsupported,
    StoreNotMigrated,
    StoreUnavailable,
)
from outbox.application.events.errors import (
    ConsumerPaused,
    ContractVersionUnpublished,
    EventTypeRetired,
    IdempotencyConflict,
)

# The SQLSTATEs our own functions raise for a refusal a caller can act on (docs/sql-api.md).
_BY_SQLSTATE: dict[str, type[ApplicationError]] = {
    "OXE01": IdempotencyConflict,
    "OXE02": EventTypeRetired,
    "OXE03": ContractVersionUnpublished,
    "OXE04": ConsumerPaused,
}

# Errors whose meaning is their class alone, translated to the error carrying the SQLSTATE.
_BY_CLASS: tuple[tuple[tuple[type[psycopg.Error], ...], type[ApplicationError]], ...] = (
    # Our schema is missing: the migrations were never applied. (A missing table or function
    # may be a bug as well as a missing migration; it stays a programming error here, and
    # ``outboxctl`` names both causes.)
    ((pg_errors.InvalidSchemaName,), StoreNotMigrated),
    # "prepared statement "_pg3_0" does not exist" / "... already exists": a pooler in
    # transaction mode sent the statement to another server connection (PgBouncer < 1.21).
    (
        (pg_errors.InvalidSqlStatementName, pg_errors.DuplicatePreparedStatement),
        PreparedStatementsUnsupported,
    ),
    ((pg_errors.InsufficientPrivilege,), PermissionDenied),
)


def translate(error: psycopg.Error) -> ApplicationError | None:
    """The application error ``error`` stands for, or None for a programming error.

    Only the primary message travels (never DETAIL, which may quote row values) and only
    for errors our own functions and constraints raise.
    """
    sqlstate = error.sqlstate or ""
    if sqlstate in _BY_SQLSTATE:
        return _BY_SQLSTATE[sqlstate](error.diag.message_primary or sqlstate)
    for classes, translated in _BY_CLASS:
        if isinstance(error, classes):
            return translated(sqlstate)
    if isinstance(error, pg_errors.UniqueViolation):
        return DuplicateMessage(error.diag.constraint_name or sqlstate)
    if isinstance(error, psycopg.DataError | psycopg.IntegrityError):
        return InvalidRequest(error.diag.message_primary or sqlstate)
    if isinstance(error, psycopg.OperationalError | psycopg.InterfaceError):
        return StoreUnavailable(failure_code(error))
    return None


# What a failed connection's libpq text says, as a code (the text itself quotes the host, the
# user and the database, so it is never shown): the first pattern found names the reason.
_CONNECT_FAILURES = (
    ("connection refused", "connection_refused"),
    ("could not translate host name", "host_not_found"),
    ("name or service not known", "host_not_found"),
    ("timeout expired", "connect_timeout"),
    ("timed out", "connect_timeout"),
    ("no route to host", "host_unreachable"),
    ("network is unreachable", "host_unreachable"),
    ("ssl", "tls_failed"),
    ("no such file or directory", "socket_not_found"),
)
_SQLSTATES = {
    "28P01": "authentication_failed",
    "28000": "authentication_failed",
    "3D000": "database_not_found",
    "57P03": "server_starting",
    "53300": "too_many_connections",
}


def failure_code(error: psycopg.Error) -> str:
    """Why ``error`` happened, as a code safe to show: the reason class of a failed
    connection (``connection_refused``, ``authentication_failed``, ``host_not_found``,
    ``connect_timeout``…), else its SQLSTATE, else its class name."""
    if error.sqlstate in _SQLSTATES:
        return _SQLSTATES[error.sqlstate]
    if error.sqlstate:
        return error.sqlstate
    text = str(error).lower()
    if "does not exist" in text and 'database "' in text:
        return "database_not_found"
    if any(
        sign in text
        for sign in ("authentication failed", 'role "', "no pg_hba.conf entry", "password")
    ):
        return "authentication_failed"
    for pattern, code in _CONNECT_FAILURES:
        if pattern in text:
            return code
    return type(error).__name__


@contextmanager
def translated_errors() -> Iterator[None]:
    """Raise the translated application error, chained to the driver error, for the block."""
    try:
        yield
    except psycopg.Error as error:
        translated = translate(error)
        if translated is None:
            raise
        raise translated from error
