"""Fixtures of the PostgreSQL tests beside the shared ones of tests/postgres_fixtures.py."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from outbox.adapters.postgres.pool import open_pool
from tests.contract.operator_harness import PostgresOperatorHarness


@pytest.fixture
async def harness(database_url: str) -> AsyncIterator[PostgresOperatorHarness]:
    """The operator store as the API role (identity_service) and as the superuser, with the
    helpers that put identities, challenges, messages and elevations in place."""
    api_pool = await open_pool(database_url, min_size=1, max_size=4, role="identity_service")
    admin_pool = await open_pool(database_url, min_size=1, max_size=4)
    try:
        yield PostgresOperatorHarness(
            database_url=database_url, api_pool=api_pool, admin_pool=admin_pool
        )
    finally:
        await api_pool.close()
        await admin_pool.close()
