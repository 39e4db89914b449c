"""Runs a command body and turns application errors into a message on stderr and an exit code."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import structlog
import typer
from psycopg import errors as pg_errors

from outbox.adapters.postgres.migrator import MigrationError, MigrationRefused
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


# What to check for each reason a connection failed (error_translation.failure_code).
_UNAVAILABLE = {
    "connection_refused": "nothing listens at the URL's host and port; is PostgreSQL up?",
    "host_not_found": "the URL's host name does not resolve; check its spelling and DNS",
    "connect_timeout": "no answer within OUTBOX_DB_CONNECT_TIMEOUT_SECONDS; a firewall or a"
    " wrong host?",
    "host_unreachable": "no route to the URL's host; check the network",
    "authentication_failed": "the login or its password was refused; check the URL's user"
    " and password (and pg_hba.conf)",
    "database_not_found": "the URL's database is missing on that server; create it first",
    "tls_failed": "the TLS handshake failed; check sslmode and the server's certificate",
    "socket_not_found": "no PostgreSQL socket at that path; is the server up?",
    "too_many_connections": "the server has no connection slot left; lower the pool sizes",
    "server_starting": "the server is starting up; retry in a moment",
}


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
        advice = _UNAVAILABLE.get(code, "check the database URL and that PostgreSQL is up")
        raise fail(
            f"database unavailable ({code}): {advice}", ExitCode.DATABASE_UNAVAILABLE
        ) from None
    except MigrationRefused as error:
        raise fail(str(error), ExitCode.REFUSED) from None
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
