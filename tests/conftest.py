"""Fixtures shared by every test suite; the PostgreSQL ones live in tests/postgres_fixtures.py."""

pytest_plugins = ["tests.postgres_fixtures"]
