"""The OS programs some tests run: found, or the test skips naming the Debian package to install.

A newcomer with only Python sees a one-line skip per missing program; CI installs the
packages and sets ``OUTBOX_TEST_REQUIRE_OS_PROGRAMS=1``, which turns each such skip into a
failure, so a test can never stop running there unnoticed.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REQUIRE_VARIABLE = "OUTBOX_TEST_REQUIRE_OS_PROGRAMS"
# Where Debian installs programs; /usr/sbin is often not on an unprivileged user's PATH.
DEBIAN_DIRECTORIES = (Path("/usr/sbin"), Path("/usr/bin"), Path("/sbin"), Path("/bin"))


def find_program(program: str) -> str | None:
    """The program's path, on PATH or in a Debian program directory; None when it is missing."""
    found = shutil.which(program)
    if found is not None:
        return found
    for directory in DEBIAN_DIRECTORIES:
        candidate = directory / program
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def require_program(program: str, package: str) -> str:
    """The program's path; when it is missing, skip (or fail, in CI) naming its Debian package."""
    found = find_program(program)
    if found is not None:
        return found
    reason = f"{program} is missing: apt-get install {package}"
    if os.environ.get(REQUIRE_VARIABLE) == "1":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)
