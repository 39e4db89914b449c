"""The staff routes and outboxctl under test, over a migrated database per test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from outbox.adapters.postgres.dispatch_store import PostgresDispatchStore
from tests.integration.operator.staff_world import StaffWorld, running_staff_world


@pytest.fixture
async def world(
    database_url: str, dispatch_store: PostgresDispatchStore, tmp_path: Path
) -> AsyncIterator[StaffWorld]:
    """The running app, the CLI and the worker side."""
    async for running in running_staff_world(database_url, dispatch_store, tmp_path):
        yield running
