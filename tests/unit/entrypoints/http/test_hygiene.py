"""The JSON nesting bound: brackets count only outside strings."""

from __future__ import annotations

import json

import pytest

from outbox.entrypoints.http.hygiene import nesting_exceeds


@pytest.mark.parametrize(
    ("value", "limit", "exceeds"),
    [
        ({"a": [[1]]}, 3, False),
        ({"a": [[[1]]]}, 3, True),
        ({"a": "[[[[[[{{{{{{"}, 2, False),
        ({"a": 'quote \\" then [[[[['}, 2, False),
        ([[[]], [[]], [[]]], 3, False),
    ],
)
def test_nesting_counts_open_arrays_and_objects_outside_strings(
    value: object, limit: int, exceeds: bool
) -> None:
    assert exceeds == nesting_exceeds(json.dumps(value).encode(), limit)


def test_malformed_text_is_left_to_the_parser() -> None:
    assert not nesting_exceeds(b"]]]]]]]]]]", 2)
    assert nesting_exceeds(b"[" * 5, 2)
