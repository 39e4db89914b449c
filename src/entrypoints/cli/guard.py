"""Runs a command body and turns application errors into a message on stderr and an exit code."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import structlog
import typer
from psycopg import errors as pg_errors

from outbox.adapters.postgres.migrator import MigrationError
from outbox.application.delivery.errors import MessageNotFound
from outbox.application.errors import (
    InvalidRequest,
    PermissionDenied,
    PreparedStatementsUnsupported,
    RoleMissing,
    StoreNotMigrated,
    StoreUnavailable,
)
from outbox.entrypoints.bootstrap.database_roles import DatabaseRoleRefused
from outbox.entrypoints.cli.exit_codes import ExitCode
from outbox.entrypoints.observability import log_format
from outbox.entrypoints.settings.reader import SettingsError

_T = TypeVar("_T")


def fail(message: str, code: ExitCode) -> typer.Exit:
    """Say ``message`` on stderr and return the Exit to raise with ``code``.

    Once logging is set up in JSON, stderr is a log stream, so the message is a JSON log line
    too (``command.failed``, its text in ``detail``); otherwise it is the plain text.
    """
    if log_format() == "json":
        structlog.get_logger().error(
            "command.failed", logger="outbox", detail=message, exit_status=int(code)
        )
    else:
        typer.echo(message, err=True)
    return typer.Exit(int(code))


@contextmanager
def guarded() -> Iterator[None]:
    """Map the errors every command can meet to one line on stderr and an exit code."""
    try:
        yield
    except SettingsError as error:
        raise fail(str(error), ExitCode.CONFIGURATION) from None
    except DatabaseRoleRefused as error:
        lines = "\n".join(f"  {problem}" for problem in error.problems)
        raise fail(
            f"refused to start: the database role may not run this job\n{lines}",
            ExitCode.CONFIGURATION,
        ) from None
    except StoreNotMigrated as error:
        raise fail(
            f"the database is not migrated ({error.code}); {error.hint}",
            ExitCode.DATABASE_UNAVAILABLE,
        ) from None
    except RoleMissing as error:
        raise fail(
            f"the database role {error.role} is missing or not granted; {error.hint}",
            ExitCode.DATABASE_UNAVAILABLE,
        ) from None
    except PreparedStatementsUnsupported as error:
        raise fail(
            f"prepared statement lost ({error.code}); {error.hint}", ExitCode.CONFIGURATION
        ) from None
    except (StoreUnavailable, subprocess.SubprocessError) as error:
        code = getattr(error, "code", "") or type(error).__name__
        raise fail(
            f"database unavailable ({code}); check OUTBOX_DATABASE_URL and that PostgreSQL is up",
            ExitCode.DATABASE_UNAVAILABLE,
        ) from None
    except MigrationError as error:
        raise fail(str(error), ExitCode.FAILURE) from None
    except (pg_errors.UndefinedFunction, pg_errors.UndefinedTable) as error:
        # Code newer than the database, most often; else a bug (the log line has no more).
        raise fail(
            f"the database lacks a table or function this version uses ({error.sqlstate});"
            f" {StoreNotMigrated.hint}",
            ExitCode.DATABASE_UNAVAILABLE,
        ) from None
    except PermissionDenied:
        raise fail(
            "the database role may not do this (SQLSTATE 42501); grant the right outbox role",
            ExitCode.REFUSED,
        ) from None
    except MessageNotFound as error:
        raise fail(f"not found: {error}", ExitCode.NOT_FOUND) from None
    except InvalidRequest as error:
        raise fail(f"refused: {error}", ExitCode.REFUSED) from None


def run_guarded(action: Callable[[], _T]) -> _T:
    """Run ``action`` inside ``guarded()``."""
    with guarded():
        return action()
