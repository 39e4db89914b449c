"""The identity world: every use case on fakes."""

from __future__ import annotations

import pytest

from tests.unit.application.identity.world import World


@pytest.fixture
def world() -> World:
    """A fresh world per test."""
    return World()
