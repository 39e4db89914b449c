"""Fixtures shared by every test suite; the PostgreSQL ones live in tests/postgres_fixtures.py."""

from __future__ import annotations

import compileall
from collections.abc import Iterator
from pathlib import Path

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


# The code the tests start as new processes (outboxctl, workers, the benchmark, scenario
# helpers). Where PYTHONDONTWRITEBYTECODE is set (CI images often set it), no process writes
# bytecode, and each of the suite's hundreds of child processes would compile the package
# again: about 0.4 s of CPU each.
COMPILED = ("src", "tests", "bench")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Bring the bytecode of what child processes import up to date, once per run (in the
    controller: xdist's workers start after it)."""
    if hasattr(session.config, "workerinput"):
        return
    root = Path(__file__).resolve().parents[1]
    for folder in COMPILED:
        compileall.compile_dir(root / folder, quiet=1, workers=0)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Order the collected tests so the long ones start first (a stable sort: the rest keep
    their order)."""
    items.sort(key=lambda item: not item.nodeid.startswith(LONG_FIRST))
