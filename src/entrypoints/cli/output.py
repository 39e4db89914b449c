"""How ``outboxctl`` prints: one JSON document for ``--json``, rich tables otherwise.

JSON is encoded by msgspec, as the HTTP API's bodies are, so a field, a timestamp and an id
read the same whichever surface printed them; the keys are camelCase, as the API's.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
import typer
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text


def print_json(value: Any) -> None:
    """Write ``value`` as one JSON document on stdout (datetimes RFC 3339, ids as strings)."""
    typer.echo(msgspec.json.encode(value).decode("utf-8"))


def camel(name: str) -> str:
    """``dead_lettered`` → ``deadLettered``: the CLI's JSON casing, as the API's."""
    first, *rest = name.split("_")
    return first + "".join(part.title() for part in rest)


def short_time(value: datetime | None) -> str:
    """A timestamp for a table cell: UTC, to the second."""
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") if value is not None else ""


# The longest value of a column that must not wrap: a failure class or reason.
WORD_WIDTH = 23


def table(*headers: str, ids: int = 0, words: tuple[int, ...] = (), **options: Any) -> Table:
    """A borderless table, two spaces between columns.

    The first ``ids`` columns hold ids, never cut (they are copied into the next command);
    the columns at the indexes in ``words`` hold enum values, never wrapped (up to
    WORD_WIDTH); every other cell folds rather than loses characters. A header or cell may
    hold several lines: the views stack related fields in one column so that a row fits 80
    columns with nothing left out.
    """
    built = Table(
        box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0), **options
    )
    for index, header in enumerate(headers):
        if index < ids:
            built.add_column(header, no_wrap=True, min_width=36)
        elif index in words:
            built.add_column(header, no_wrap=True, max_width=WORD_WIDTH)
        else:
            built.add_column(header, overflow="fold")
    return built


def lines(*values: str | None) -> Text:
    """One cell of stacked values, one per line (an empty value keeps its line), as plain
    text: brackets in a value (``[address]``) are shown, never read as markup."""
    return Text("\n".join(value or "" for value in values))


def print_table(rows: Table) -> None:
    """Write a rich table on stdout, as wide as the terminal or ``COLUMNS`` (80 in a pipe)."""
    Console().print(rows)
