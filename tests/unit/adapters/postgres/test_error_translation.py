"""Driver errors become application errors; programming errors stay what they are."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import errors
from psycopg_pool import PoolTimeout

from outbox.adapters.postgres.error_translation import translate, translated_errors
from outbox.application.delivery.errors import DuplicateMessage
from outbox.application.errors import (
    InvalidRequest,
    PermissionDenied,
    PreparedStatementsUnsupported,
    StoreNotMigrated,
    StoreUnavailable,
)


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (errors.InsufficientPrivilege(), PermissionDenied),
        (errors.UniqueViolation(), DuplicateMessage),
        (errors.InvalidParameterValue(), InvalidRequest),
        (errors.CheckViolation(), InvalidRequest),
        (errors.IntegrityConstraintViolation(), InvalidRequest),
        (errors.AdminShutdown(), StoreUnavailable),
        (errors.SerializationFailure(), StoreUnavailable),
        (errors.DeadlockDetected(), StoreUnavailable),
        (errors.TooManyConnections(), StoreUnavailable),
        (PoolTimeout(), StoreUnavailable),
        (psycopg.OperationalError(), StoreUnavailable),
        (psycopg.InterfaceError(), StoreUnavailable),
    ],
)
def test_each_driver_error_maps_to_its_application_error(error, expected):
    assert isinstance(translate(error), expected)


def test_store_unavailable_carries_the_sqlstate():
    translated = translate(errors.AdminShutdown())
    assert isinstance(translated, StoreUnavailable)
    assert "57P01" == translated.code


def test_store_unavailable_without_a_sqlstate_names_the_driver_error():
    translated = translate(PoolTimeout())
    assert isinstance(translated, StoreUnavailable)
    assert "PoolTimeout" == translated.code


@pytest.mark.parametrize(
    "error", [errors.UndefinedFunction(), errors.SyntaxError(), errors.UndefinedTable()]
)
def test_programming_errors_are_not_disguised(error):
    assert translate(error) is None
    with pytest.raises(type(error)), translated_errors():
        raise error


def test_a_missing_schema_means_the_migrations_were_never_applied():
    translated = translate(errors.InvalidSchemaName())
    assert isinstance(translated, StoreNotMigrated)
    assert "3F000" == translated.code
    assert "outboxctl db migrate" in translated.hint


@pytest.mark.parametrize(
    "error", [errors.InvalidSqlStatementName(), errors.DuplicatePreparedStatement()]
)
def test_a_lost_prepared_statement_names_the_setting_to_change(error):
    translated = translate(error)
    assert isinstance(translated, PreparedStatementsUnsupported)
    assert "OUTBOX_DB_PREPARED_STATEMENTS=false" in translated.hint


def test_the_application_error_is_chained_to_the_driver_error():
    original = errors.InsufficientPrivilege()
    with pytest.raises(PermissionDenied) as caught, translated_errors():
        raise original
    assert original is caught.value.__cause__
