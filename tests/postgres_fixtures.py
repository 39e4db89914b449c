"""PostgreSQL fixtures: a fresh migrated database per test, and connections acting as a role.

- ``database_url``: superuser connection string of a migrated database in its migrated state,
  the session's one, put back after each test (tests/database_reset.py).
- ``connect_as``: ``async with connect_as("outbox_worker") as conn`` opens an autocommit
  connection to that database and ``SET ROLE``s it (``None`` stays superuser).
- ``worker_pool`` / ``dispatch_store``: the real adapter acting as ``outbox_worker``.
- ``empty_database_url``: a fresh database with no migration applied (migration tests).
- ``postgres_server``: the session's server, to create extra databases.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import psycopg
import pytest
from psycopg import sql
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.dispatch_store import PostgresDispatchStore
from outbox.adapters.postgres.migrator import apply_migrations
from outbox.adapters.postgres.pool import open_pool
from outbox.adapters.postgres.work_listener import WorkListener
from tests.postgres_server import Reusable, TestServer

ConnectAs = Callable[..., AbstractAsyncContextManager[psycopg.AsyncConnection]]


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[TestServer]:
    """The session's PostgreSQL server (OUTBOX_TEST_DATABASE_URL or embedded)."""
    server = TestServer.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
async def migrated_template(postgres_server: TestServer) -> AsyncIterator[str]:
    """The name of this session's template database, built by running our migrations."""
    name = postgres_server.create_database(prefix="outbox_template")
    try:
        await apply_migrations(postgres_server.url(name))
        yield name
    finally:
        postgres_server.drop_database(name)


@pytest.fixture(scope="session")
def reusable_database(postgres_server: TestServer, migrated_template: str) -> Iterator[Reusable]:
    """This session's working database, put back to the migrated state after every test."""
    reusable = Reusable.create(postgres_server, migrated_template)
    try:
        yield reusable
    finally:
        reusable.drop()


@pytest.fixture
def database_url(reusable_database: Reusable) -> Iterator[str]:
    """Superuser connection string of a migrated database that only this test is using.

    The database is the session's, put back to the migrated state after the test (its rows
    emptied, or copied again from the template when the test changed more than rows), so a test may
    commit, open pools and start processes on it as on a database of its own.
    """
    yield reusable_database.url
    reusable_database.reset()


@pytest.fixture
def connect_as(database_url: str) -> ConnectAs:
    """Open a connection to the test database acting as a role (``None``: superuser)."""

    @asynccontextmanager
    async def connect(
        role: str | None = None, *, autocommit: bool = True
    ) -> AsyncIterator[psycopg.AsyncConnection]:
        conn = await psycopg.AsyncConnection.connect(database_url, autocommit=autocommit)
        try:
            if role is not None:
                await conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
            yield conn
        finally:
            await conn.close()

    return connect


@pytest.fixture
async def worker_pool(database_url: str) -> AsyncIterator[AsyncConnectionPool]:
    """A pool on the test database whose connections act as ``outbox_worker``."""
    pool = await open_pool(database_url, min_size=1, max_size=8, role="outbox_worker")
    try:
        yield pool
    finally:
        await pool.close()


@pytest.fixture
async def dispatch_store(
    database_url: str, worker_pool: AsyncConnectionPool
) -> AsyncIterator[PostgresDispatchStore]:
    """The real DispatchStore acting as ``outbox_worker`` on the test database."""
    store = PostgresDispatchStore(worker_pool, WorkListener(database_url))
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture
def empty_database_url(postgres_server: TestServer) -> Iterator[str]:
    """Superuser connection string of a fresh database with no migration applied."""
    name = postgres_server.create_database(prefix="outbox_empty")
    try:
        yield postgres_server.url(name)
    finally:
        postgres_server.drop_database(name)
