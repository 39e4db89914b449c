"""The staff routes and outboxctl under test, over a migrated database per test."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import structlog

from adapters.postgres.dispatch_store import PostgresDispatchStore
from tests.integration.operator.staff_world import StaffWorld, running_staff_world


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """outboxctl configures logging for the whole process (onto CliRunner's streams): put
    structlog and the root logger back afterwards."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    structlog.reset_defaults()
    structlog.contextvars.clear_contextvars()
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
    root.setLevel(level)


@pytest.fixture
async def world(
    database_url: str, dispatch_store: PostgresDispatchStore, tmp_path: Path
) -> AsyncIterator[StaffWorld]:
    """The running app, the CLI and the worker side."""
    async for running in running_staff_world(database_url, dispatch_store, tmp_path):
        yield running
