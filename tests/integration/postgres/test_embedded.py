"""The embedded default: with no OUTBOX_DATABASE_URL the CLI starts a private PostgreSQL.

This runs in CI even though CI points the rest of the suite at the machine's server.
"""

from __future__ import annotations

import json

import psycopg
import pytest
from typer.testing import CliRunner

from adapters.postgres.embedded import EmbeddedPostgres
from entrypoints.cli.app import app
from entrypoints.cli.exit_codes import ExitCode

pytestmark = pytest.mark.integration


def test_db_migrate_without_a_url_migrates_an_embedded_server_in_the_data_dir(tmp_path):
    env = {"OUTBOX_DATABASE_URL": None, "OUTBOX_DATA_DIR": str(tmp_path)}
    runner = CliRunner()
    try:
        migrate = runner.invoke(app, ["db", "migrate"], env=env)
        again = runner.invoke(app, ["db", "migrate"], env=env)
        status = runner.invoke(app, ["db", "status", "--json"], env=env)

        assert ExitCode.OK == migrate.exit_code, migrate.output
        assert "up to date\n" == again.stdout
        assert {"applied"} == {item["state"] for item in json.loads(status.stdout)}
        assert (tmp_path / "postgres" / "PG_VERSION").exists()
        server = EmbeddedPostgres.start(tmp_path / "postgres")
        with psycopg.connect(server.url("outbox")) as conn:
            row = conn.execute("SELECT to_regprocedure('outbox.expire_messages(integer)')")
            assert ("outbox.expire_messages(integer)",) == tuple(map(str, row.fetchone() or ()))
    finally:
        EmbeddedPostgres.start(tmp_path / "postgres").stop()
