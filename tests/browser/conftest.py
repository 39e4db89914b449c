"""The browser tests use the console world of the HTTP tests, and Debian's chromium."""

from __future__ import annotations

import pytest

from tests.integration.console.conftest import world
from tests.os_programs import require_program

__all__ = ["chromium", "world"]


@pytest.fixture(scope="session", autouse=True)
def chromium() -> str:
    """Debian's chromium, which Playwright launches: looked for before any database is made."""
    return require_program("chromium", "chromium")
