"""The exit codes of ``outboxctl``: one enum, documented in the README."""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """What a finished ``outboxctl`` command tells its caller."""

    OK = 0
    FAILURE = 1  # an unexpected error; the log line names it
    USAGE = 2  # bad arguments (Typer's own code for usage errors)
    CONFIGURATION = 3  # a setting is missing or invalid; the message names the variable
    DATABASE_UNAVAILABLE = 4  # the database cannot be reached
    NOT_FOUND = 5  # the named message, staff member or object does not exist
    REFUSED = 6  # the rules forbid this (a reissue that is not allowed, a missing grant)
    CONFLICT = 7  # a concurrent operation holds the object; try again
    UNHEALTHY = 8  # outboxctl doctor found something to do (it says what)
