"""Fixtures shared by every test suite; the PostgreSQL ones live in tests/postgres_fixtures.py."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import structlog

from entrypoints.observability import QUIET_LIBRARIES

pytest_plugins = ["tests.postgres_fixtures"]


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """Put structlog, the root logger and the quieted libraries' loggers back after every test.

    Commands run in-process (CliRunner) and logging tests configure logging for the whole
    process, onto streams that close when the test ends; a later test must not write there.
    """
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    quiet = {name: logging.getLogger(name).level for name in QUIET_LIBRARIES}
    yield
    structlog.reset_defaults()
    structlog.contextvars.clear_contextvars()
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
    root.setLevel(level)
    for name, quiet_level in quiet.items():  # configure_logging quiets these (boto3, httpx…)
        logging.getLogger(name).setLevel(quiet_level)
