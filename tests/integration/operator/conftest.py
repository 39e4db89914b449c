"""The staff routes and outboxctl under test, over a migrated database per test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from outbox.adapters.postgres.dispatch_store import PostgresDispatchStore
from tests.integration.operator.staff_world import StaffWorld, running_staff_world
from tests.outboxctl import invoke_outboxctl


@pytest.fixture
async def world(
    database_url: str, dispatch_store: PostgresDispatchStore, tmp_path: Path
) -> AsyncIterator[StaffWorld]:
    """The running app, the CLI and the worker side."""
    async for running in running_staff_world(database_url, dispatch_store, tmp_path):
        yield running


@pytest.fixture
def cli(database_url: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    """``outboxctl`` against the test's database, quiet, 80 columns wide."""
    variables = {
        "OUTBOX_DATABASE_URL": database_url,
        "OUTBOX_DATA_DIR": str(tmp_path),
        "OUTBOX_LOG_LEVEL": "warning",
        "COLUMNS": "80",
    }

    def run(*args: str):  # type: ignore[no-untyped-def]
        return invoke_outboxctl(*args, variables=variables)

    return run
