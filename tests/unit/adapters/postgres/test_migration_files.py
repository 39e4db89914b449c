"""The migration files keep the one-definition rule: a function is created once, in one file.

A second ``CREATE OR REPLACE`` of a function in a file of the same sequence would silently
undo an edit made where the function was created; a later migration may replace a function
only after the file that created it, never before, and never by re-creating it.
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict

from outbox.adapters.postgres.migrator import load_migrations

_FUNCTION = re.compile(
    r"^\s*CREATE\s+(?P<replace>OR\s+REPLACE\s+)?FUNCTION\s+(?P<name>[a-z_]+\.[a-z_]+)\s*\(",
    re.IGNORECASE | re.MULTILINE,
)


def _definitions() -> dict[str, list[tuple[int, bool]]]:
    """Function name → every (version, is_replace) that defines it, in file order."""
    found: dict[str, list[tuple[int, bool]]] = defaultdict(list)
    for migration in load_migrations():
        for match in _FUNCTION.finditer(migration.sql):
            found[match["name"].lower()].append((migration.version, bool(match["replace"])))
    return found


def test_the_migrations_define_functions_to_check() -> None:
    assert len(_definitions()) >= 20


def test_every_function_is_first_created_without_or_replace() -> None:
    offenders = [name for name, defs in _definitions().items() if defs[0][1]]

    assert [] == offenders


def test_a_function_is_replaced_only_by_a_later_file_with_or_replace() -> None:
    offenders = [
        name
        for name, defs in _definitions().items()
        for (earlier, _), (later, replace) in itertools.pairwise(defs)
        if later <= earlier or not replace
    ]

    assert [] == offenders
