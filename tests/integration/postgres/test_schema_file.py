"""schema.sql is what a fresh migrate leaves: ``outboxctl db schema`` regenerates it, and the
committed file must be the command's output (a new migration without a regenerated file
fails here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from outbox.adapters.postgres.schema_dump import SCHEMA_FILE
from tests.outboxctl import invoke_outboxctl

pytestmark = pytest.mark.integration


def test_the_committed_schema_is_what_the_migrations_make(tmp_path: Path) -> None:
    fresh = tmp_path / "schema.sql"

    result = invoke_outboxctl("db", "schema", "--output", str(fresh), variables={})

    assert 0 == result.returncode, result.stderr
    assert SCHEMA_FILE.read_text(encoding="utf-8") == fresh.read_text(encoding="utf-8"), (
        "schema.sql is stale: run `outboxctl db schema --output src/adapters/postgres/schema.sql`"
    )
    text = fresh.read_text(encoding="utf-8")
    for needle in (
        "CREATE FUNCTION outbox.claim_messages(",
        "CREATE TABLE events.domain_events (",
        "GRANT ALL ON FUNCTION outbox.enqueue_message(",
    ):
        assert needle in text
