"""The console under test: the admin app with its pages, over a migrated database per test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from outbox.adapters.postgres.dispatch_store import PostgresDispatchStore
from tests.integration.console.world import ConsoleWorld, running_console_world


@pytest.fixture
async def world(
    database_url: str, dispatch_store: PostgresDispatchStore, tmp_path: Path
) -> AsyncIterator[ConsoleWorld]:
    """The running admin app with the console, the CLI and the worker side."""
    async for running in running_console_world(database_url, dispatch_store, tmp_path):
        yield running
