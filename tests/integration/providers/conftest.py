"""Fixtures for provider tests: a fixed clock and addresses that fail in known ways."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.clock import FixedClock
from tests.integration.providers import network


@pytest.fixture
def clock() -> FixedClock:
    """A clock tests can move."""
    return FixedClock()


@pytest.fixture
def refused_port() -> int:
    """A loopback port that refuses connections."""
    return network.closed_port()


@pytest.fixture
def unreachable_port() -> Iterator[int]:
    """A loopback port where connecting times out."""
    with network.black_hole() as port:
        yield port
