"""The browser tests use the console world of the HTTP tests."""

from __future__ import annotations

from tests.integration.console.conftest import world

__all__ = ["world"]
