"""The identity API under test: the real app, a migrated database per test, a worker."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from outbox.adapters.postgres.dispatch_store import PostgresDispatchStore
from tests.integration.identity.api import Api, ApiSettings, running_api


@pytest.fixture
def api_settings() -> ApiSettings:
    """Generous limits; a test overrides this fixture to change them."""
    return ApiSettings()


@pytest.fixture
async def api(
    database_url: str, dispatch_store: PostgresDispatchStore, api_settings: ApiSettings
) -> AsyncIterator[Api]:
    """The running app and the worker side."""
    async for running in running_api(database_url, dispatch_store, api_settings):
        yield running
