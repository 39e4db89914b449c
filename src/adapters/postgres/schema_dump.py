"""The current definition of every SQL object, as a fresh ``outboxctl db migrate`` leaves it.

The migrations say how the schema came to be; ``schema.sql`` (beside them) says what it is
now, in one file. It is made on a throwaway embedded server, by that distribution's own
``pg_dump``, so it reads the same whatever server a developer has: ``outboxctl db schema``
prints it, and a test checks the committed file against it.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import tempfile
from pathlib import Path

from outbox.adapters.postgres.embedded import EmbeddedPostgres, pg_binary
from outbox.adapters.postgres.migrator import run_migrations

SCHEMA_FILE = Path(__file__).with_name("schema.sql")
HEADER = """\
-- The outbox's SQL objects as a fresh `outboxctl db migrate` leaves them: tables, indexes,
-- functions, triggers and grants, in pg_dump's order. Generated, never edited: after adding a
-- migration, run `outboxctl db schema --output src/adapters/postgres/schema.sql`
-- (tests/integration/postgres/test_schema_file.py checks it). Roles are made by the
-- migrations and are cluster-wide, so they are not here.

"""
# pg_dump's lines that change with the tool, the run or the session, not with the schema.
NOISE = re.compile(
    r"^(\\restrict .*|\\unrestrict .*|-- Dumped (from|by) .*|SET .*|"
    r"SELECT pg_catalog\.set_config\('search_path'.*)$"
)


def normalized(dump: str) -> str:
    """``dump`` without its noise, blank runs folded to one line."""
    kept = [line for line in dump.splitlines() if not NOISE.match(line)]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()
    return HEADER + text + "\n"


def current_schema() -> str:
    """Migrate an empty database on a throwaway embedded server and dump its schema."""
    with tempfile.TemporaryDirectory(prefix="outbox-schema-") as scratch:
        server = EmbeddedPostgres.start(Path(scratch) / "data", delete_on_stop=True)
        try:
            url = server.ensure_database("outbox_schema")
            asyncio.run(run_migrations(url))
            dumped = subprocess.run(  # noqa: S603 - our own distribution's pg_dump, fixed args
                [str(pg_binary("pg_dump")), "--schema-only", "--no-owner", "--dbname", url],
                capture_output=True,
                text=True,
                check=True,
                timeout=120,
            )
        finally:
            server.stop()
    return normalized(dumped.stdout)
