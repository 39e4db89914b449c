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


# The longest tests (real worker processes killed and faulted, the benchmark's smoke run, the
# browser) go first: with pytest-xdist the short ones then fill the gaps around them, instead
# of one process running a two-minute tail alone.
LONG_FIRST = ("tests/reliability/", "tests/bench/", "tests/browser/", "tests/integration/worker/")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Order the collected tests so the long ones start first (a stable sort: the rest keep
    their order)."""
    items.sort(key=lambda item: not item.nodeid.startswith(LONG_FIRST))
