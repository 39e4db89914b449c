"""Translates the identity functions' database errors into the application's errors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import errors as pg_errors

from outbox.adapters.postgres.error_translation import translate
from outbox.application.delivery.errors import DuplicateMessage
from outbox.application.errors import StoreUnavailable
from outbox.application.identity.errors import Conflict, IdentifierTaken

TAKEN = "login_identifiers_taken"  # raised by identity.save_login_identifier
MESSAGE_KEY = "messages_pkey"  # a duplicate message id stays the store's DuplicateMessage


@contextmanager
def identity_errors() -> Iterator[None]:
    """Raise the application error a database error stands for, chained to it.

    An identifier another identity holds is IdentifierTaken; another unique violation is a
    concurrent duplicate (Conflict); serialization failures and deadlocks are transient
    (StoreUnavailable); the rest is the store's own translation.
    """
    try:
        yield
    except pg_errors.UniqueViolation as error:
        constraint = error.diag.constraint_name or ""
        if constraint == TAKEN:
            raise IdentifierTaken from error
        if constraint != MESSAGE_KEY:
            raise Conflict(constraint) from error
        raise DuplicateMessage(constraint) from error
    except (pg_errors.SerializationFailure, pg_errors.DeadlockDetected) as error:
        raise StoreUnavailable(error.sqlstate or "") from error
    except psycopg.Error as error:
        translated = translate(error)
        if translated is None:
            raise
        raise translated from error
