"""The test PostgreSQL: the server named by OUTBOX_TEST_DATABASE_URL, or a private embedded one.

One template database per test session is built by running our own migrations, and one
working copy of it serves the session's tests, put back to the migrated state after each
(tests/database_reset.py). Names are random, so concurrent sessions (pytest-xdist workers,
other people's runs) never collide: each xdist worker is its own process with its own
template, working copy (and embedded server).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from pathlib import Path
from urllib.parse import quote, urlencode

import attrs
import psycopg
from psycopg import conninfo, sql

from outbox.adapters.postgres.embedded import EmbeddedPostgres
from tests.database_reset import Baseline, NeedsNewCopy

ENV_URL = "OUTBOX_TEST_DATABASE_URL"


def database_url(server_url: str, database: str) -> str:
    """The connection string of ``database`` on the server of ``server_url``."""
    return conninfo.make_conninfo(server_url, dbname=database)


def url_with_password(url: str, password: str, *, database: str | None = None) -> str:
    """``url`` as a ``postgresql://`` URL that carries ``password`` (and names ``database``).

    It works for a TCP server and for the embedded one, which listens on a Unix socket only
    (its host is a directory, passed as a query parameter).
    """
    options = conninfo.conninfo_to_dict(url)
    user = quote(str(options.get("user", "postgres")), safe="")
    dbname = quote(str(database or options["dbname"]), safe="")
    host, port = str(options.get("host", "127.0.0.1")), str(options.get("port", 5432))
    credentials = f"{user}:{quote(password, safe='')}"
    if host.startswith("/"):
        return f"postgresql://{credentials}@/{dbname}?{urlencode({'host': host, 'port': port})}"
    return f"postgresql://{credentials}@{host}:{port}/{dbname}"


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
        # In memory where the machine has a tmpfs: the data is thrown away after the run.
        shm = Path("/dev/shm")  # noqa: S108 - a private directory is made inside it
        scratch = shm if shm.is_dir() and os.access(shm, os.W_OK) else None
        data_dir = Path(tempfile.mkdtemp(prefix="outbox-test-pg-", dir=scratch)) / "data"
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


@attrs.define
class Reusable:
    """A migrated database that tests take in turn, each handing it back in the migrated state."""

    server: TestServer
    template: str
    name: str
    baseline: Baseline
    copies: int = 1  # how often it had to be copied again (a test changed more than rows)
    # The connection that puts it back, kept between tests (a new backend per test costs).
    _conn: psycopg.Connection | None = None

    @classmethod
    def create(cls, server: TestServer, template: str) -> Reusable:
        """Copy ``template`` and read what the copy holds."""
        name = server.create_database(prefix="outbox_test", template=template)
        with psycopg.connect(server.url(name), autocommit=True) as conn:
            baseline = Baseline.take(conn)
        return cls(server=server, template=template, name=name, baseline=baseline)

    @property
    def url(self) -> str:
        """Its superuser connection string."""
        return self.server.url(self.name)

    def reset(self) -> None:
        """Put it back to the migrated state: truncated, or copied anew when that cannot do."""
        try:
            try:
                self.baseline.restore(self._connection())
            except psycopg.OperationalError:  # a test terminated the kept connection
                self._close()
                self.baseline.restore(self._connection())
        except (NeedsNewCopy, psycopg.OperationalError):
            self._close()
            self.server.drop_database(self.name)
            self.name = self.server.create_database(prefix="outbox_test", template=self.template)
            self.copies += 1

    def drop(self) -> None:
        """Drop it."""
        self._close()
        self.server.drop_database(self.name)

    def _connection(self) -> psycopg.Connection:
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(self.url, autocommit=True)
        return self._conn

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
