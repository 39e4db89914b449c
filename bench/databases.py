"""The PostgreSQL server a run measures against, and one fresh database per measured system."""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import attrs
import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from outbox.adapters.postgres.embedded import EmbeddedPostgres

URL_VARIABLE = "OUTBOX_DATABASE_URL"


@attrs.frozen(kw_only=True)
class Database:
    """One database: a psycopg conninfo string and the keyword arguments asyncpg takes."""

    name: str
    conninfo: str

    def asyncpg_params(self) -> dict[str, object]:
        """The same connection for asyncpg (host may be a Unix socket directory)."""
        params = conninfo_to_dict(self.conninfo)
        out: dict[str, object] = {"database": params.get("dbname", self.name)}
        for ours, theirs in (("host", "host"), ("user", "user"), ("password", "password")):
            if params.get(ours):
                out[theirs] = params[ours]
        if params.get("port"):
            out["port"] = int(str(params["port"]))
        return out


@attrs.frozen(kw_only=True)
class Server:
    """A reachable server on which the run may create and drop databases (a superuser)."""

    kind: str  # "embedded" or "url"
    admin_conninfo: str = attrs.field(repr=False)

    def version(self) -> str:
        """The server's ``SHOW server_version``."""
        with psycopg.connect(self.admin_conninfo, autocommit=True) as conn:
            row = conn.execute("SHOW server_version").fetchone()
        return str(row[0]) if row else "unknown"

    @asynccontextmanager
    async def fresh_database(self, system: str) -> AsyncIterator[Database]:
        """A new empty database for ``system``, dropped (forcibly) when the block ends."""
        name = f"bench_{system}_{os.getpid()}_{secrets.token_hex(3)}"
        async with await psycopg.AsyncConnection.connect(
            self.admin_conninfo, autocommit=True
        ) as admin:
            await admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            yield Database(name=name, conninfo=make_conninfo(self.admin_conninfo, dbname=name))
        finally:
            async with await psycopg.AsyncConnection.connect(
                self.admin_conninfo, autocommit=True
            ) as admin:
                await admin.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
                )


@contextmanager
def database_server() -> Iterator[Server]:
    """``OUTBOX_DATABASE_URL`` when set (a superuser URL), else a private embedded PostgreSQL."""
    url = os.environ.get(URL_VARIABLE, "").strip()
    if url:
        yield Server(kind="url", admin_conninfo=url)
        return
    with embedded_server() as conninfo:
        yield Server(kind="embedded", admin_conninfo=conninfo)


@contextmanager
def embedded_server() -> Iterator[str]:
    """Start a throw-away embedded server (default durability settings) and yield its URL."""
    scratch = Path(tempfile.mkdtemp(prefix="outbox-bench-pg-"))
    server = EmbeddedPostgres.start(scratch / "data", delete_on_stop=True)
    try:
        yield server.url("postgres")
    finally:
        server.stop()
        shutil.rmtree(scratch, ignore_errors=True)
