"""Every contract test runs twice: against the in-memory fake and against PostgreSQL."""

from __future__ import annotations

import pytest

from tests.contract.harness import Harness, MemoryHarness, PostgresHarness


@pytest.fixture(params=["memory", pytest.param("postgres", marks=pytest.mark.integration)])
def outbox(request: pytest.FixtureRequest) -> Harness:
    """The store under test, with its producer side and its clock."""
    if request.param == "memory":
        return MemoryHarness()
    return PostgresHarness(
        store=request.getfixturevalue("dispatch_store"),
        connect_as=request.getfixturevalue("connect_as"),
    )


@pytest.fixture(params=["memory", pytest.param("postgres", marks=pytest.mark.integration)])
def lifecycle(request: pytest.FixtureRequest) -> Harness:
    """A harness for many examples in one test: ``reset`` empties it between them."""
    if request.param == "memory":
        return MemoryHarness()
    return PostgresHarness(
        store=request.getfixturevalue("dispatch_store"),
        connect_as=request.getfixturevalue("connect_as"),
    )
