"""The inbox's files of the one sequence: every file that touches the inbox is one of them, and
they touch nothing else, so an inbox-only database can apply them as a full one does."""

from __future__ import annotations

import re

from outbox.adapters.postgres.inbox_installer import INBOX_FILES, file_name, inbox_migrations
from outbox.adapters.postgres.migrator import load_migrations

# The inbox's schema and its role, wherever a file names them.
_INBOX = re.compile(r"\binbox(\.|_consumer\b|\s*;|\s+AUTHORIZATION\b)", re.IGNORECASE)
# A schema of the outbox's other contexts, qualifying an object.
_OTHER_SCHEMA = re.compile(r"\b(outbox|outbox_meta|identity|events|notifications)\.[a-z_]+")


def _code(sql: str) -> str:
    """``sql`` without its comments (they may speak of anything)."""
    return re.sub(r"--[^\n]*", "", sql)


def test_every_file_that_touches_the_inbox_is_an_inbox_file() -> None:
    touching = [
        file_name(migration)
        for migration in load_migrations()
        if _INBOX.search(_code(migration.sql))
    ]

    assert list(INBOX_FILES) == touching


def test_the_inbox_files_touch_no_other_schema() -> None:
    found = {
        file_name(migration): _OTHER_SCHEMA.findall(_code(migration.sql))
        for migration in inbox_migrations()
    }

    assert {name: [] for name in INBOX_FILES} == found


def test_the_inbox_files_are_in_the_sequence_order() -> None:
    versions = [migration.version for migration in inbox_migrations()]

    assert sorted(versions) == versions
