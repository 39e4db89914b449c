"""Translates psycopg errors into the application's errors, keeping only safe text."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import errors as pg_errors

from application.errors import ApplicationError, InvalidRequest, PermissionDenied, StoreUnavailable
from application.outbox.errors import DuplicateMessage


def translate(error: psycopg.Error) -> ApplicationError | None:
    """The application error ``error`` stands for, or None for a programming error.

    Only the primary message travels (never DETAIL, which may quote row values) and only
    for errors our own functions and constraints raise.
    """
    sqlstate = error.sqlstate or ""
    if isinstance(error, pg_errors.InsufficientPrivilege):
        return PermissionDenied(sqlstate)
    if isinstance(error, pg_errors.UniqueViolation):
        return DuplicateMessage(error.diag.constraint_name or sqlstate)
    if isinstance(error, psycopg.DataError | psycopg.IntegrityError):
        return InvalidRequest(error.diag.message_primary or sqlstate)
    if isinstance(error, psycopg.OperationalError | psycopg.InterfaceError):
        return StoreUnavailable(sqlstate or type(error).__name__)
    return None


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
