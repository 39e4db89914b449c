"""Fixtures shared by every test suite; the PostgreSQL ones live in tests/postgres_fixtures.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.logging_state import logging_restored

pytest_plugins = ["tests.postgres_fixtures"]


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """Put structlog, the root logger and the quieted libraries' loggers back after every test
    (tests/logging_state.py)."""
    with logging_restored():
        yield
