"""schema.sql keeps nothing of pg_dump's output that changes with the tool or the run."""

from __future__ import annotations

from outbox.adapters.postgres.schema_dump import HEADER, normalized


def test_the_dump_keeps_no_line_that_changes_from_run_to_run() -> None:
    dump = "\n".join(
        [
            "\\restrict 3dWz0kq",
            "-- Dumped from database version 18.1",
            "-- Dumped by pg_dump version 18.1",
            "SET statement_timeout = 0;",
            "SELECT pg_catalog.set_config('search_path', '', false);",
            "",
            "",
            "",
            "CREATE SCHEMA events;",
            "\\unrestrict 3dWz0kq",
        ]
    )

    text = normalized(dump)

    assert HEADER + "CREATE SCHEMA events;\n" == text
    assert "restrict" not in text
    assert "Dumped" not in text
