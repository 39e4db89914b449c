"""Fixtures the integration tests of several areas share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.events_rows import EventRows
from tests.integration.providers.smtp_stand_in import Behaviour, SmtpStandIn


@pytest.fixture
def smtp() -> Iterator[SmtpStandIn]:
    """A local SMTP server; tests set its behaviour (e.g. slow DATA replies)."""
    server = SmtpStandIn(Behaviour())
    server.start()
    yield server
    server.stop()


@pytest.fixture
async def rows(database_url: str) -> EventRows:
    """Tenant events appended, published and parked in the test's database."""
    events = EventRows(database_url)
    await events.setup()
    return events
