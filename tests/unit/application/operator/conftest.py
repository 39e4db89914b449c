"""The operator world: every operator use case on fakes."""

from __future__ import annotations

import pytest

from tests.unit.application.operator.world import OperatorWorld


@pytest.fixture
def world() -> OperatorWorld:
    """A fresh world per test."""
    return OperatorWorld()
