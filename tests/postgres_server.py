"""The test PostgreSQL: the server named by OUTBOX_TEST_DATABASE_URL, or a private embedded one.

One template database per test session is built by running our own migrations; each test
that asks gets a fresh copy (CREATE DATABASE … TEMPLATE), dropped afterwards. Names are
random, so concurrent sessions (pytest-xdist workers, other people's runs) never collide:
each xdist worker is its own process with its own template (and its own embedded server).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from pathlib import Path

import attrs
import psycopg
from psycopg import conninfo, sql

from adapters.postgres.embedded import EmbeddedPostgres

ENV_URL = "OUTBOX_TEST_DATABASE_URL"


def database_url(server_url: str, database: str) -> str:
    """The connection string of ``database`` on the server of ``server_url``."""
    return conninfo.make_conninfo(server_url, dbname=database)


@attrs.define
class TestServer:
    """A PostgreSQL server where tests may create and drop databases (superuser)."""

    admin_url: str
    embedded: EmbeddedPostgres | None = None

    @classmethod
    def start(cls) -> TestServer:
        """Use OUTBOX_TEST_DATABASE_URL when set, else start an embedded server in a temp dir."""
        url = os.environ.get(ENV_URL, "").strip()
        if url:
            return cls(admin_url=url)
        data_dir = Path(tempfile.mkdtemp(prefix="outbox-test-pg-")) / "data"
        embedded = EmbeddedPostgres.start(data_dir, delete_on_stop=True)
        server = cls(admin_url=embedded.url("postgres"), embedded=embedded)
        # Throw-away data: durability only costs time here.
        with psycopg.connect(server.admin_url, autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET fsync = off")
            conn.execute("ALTER SYSTEM SET synchronous_commit = off")
            conn.execute("ALTER SYSTEM SET full_page_writes = off")
            conn.execute("SELECT pg_catalog.pg_reload_conf()")
        return server

    def stop(self) -> None:
        """Stop the embedded server, if this session started one, and remove its directory."""
        if self.embedded is not None:
            self.embedded.stop()
            shutil.rmtree(self.embedded.data_dir.parent, ignore_errors=True)

    def create_database(self, *, prefix: str, template: str | None = None) -> str:
        """Create a database with a unique name (copied from ``template``) and return its name."""
        name = f"{prefix}_{uuid.uuid4().hex[:16]}"
        statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template is not None:
            statement = sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(template)
            )
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(statement)
        return name

    def drop_database(self, name: str) -> None:
        """Drop ``name``, disconnecting whoever is still connected."""
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )

    def url(self, database: str) -> str:
        """A superuser connection string for ``database`` on this server."""
        return database_url(self.admin_url, database)
