"""How operator views print as tables that fit 80 columns (``--json`` prints the wire
package's views, the staff routes' bodies)."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from outbox.application.delivery.views import (
    Backlog,
    DeadLetterSummary,
    MessageDetail,
    MessageSummary,
    Repair,
)
from outbox.application.staff import KeysetPage
from outbox.entrypoints.cli.output import lines, short_time, table
from outbox.entrypoints.wire import fields_of
from outbox.entrypoints.wire.messages import MessageView


def backlog_table(backlog: Backlog) -> Table:
    """One row per state; the caption says how long the oldest due message has waited."""
    age = backlog.oldest_due_age
    caption = (
        f"oldest due pending message: waiting {age.total_seconds():.1f} s"
        if age is not None
        else "no pending message is due"
    )
    rows = table("State", "Messages", caption=caption)
    for state, count in backlog.by_state().items():
        rows.add_row(lines(state.value), lines(str(count)))
    return rows


def page_hints(page: KeysetPage[Any]) -> list[str]:
    """Where the list goes on, as the option to add (printed on stderr under a table)."""
    hints = []
    if page.older_cursor is not None:
        hints.append(f"older: add --after {page.older_cursor}")
    if page.newer_cursor is not None:
        hints.append(f"newer: add --before {page.newer_cursor}")
    return hints


def _repair_cell(repair: Repair | None) -> str:
    """``reissued``, ``requeued`` or ``no``; the JSON and ``messages show`` name the copy."""
    return "no" if repair is None else f"{repair.action.value}d"


def dead_letter_table(items: tuple[DeadLetterSummary, ...]) -> Table:
    """The page as a table, newest first; related fields share a column, one per line."""
    rows = table(
        "ID\nDead at (UTC)\nRepaired",
        "Purpose\nFailure",
        "Destination\nChannel, tries",
        ids=1,
        words=(1,),
    )
    for item in items:
        rows.add_row(
            lines(str(item.id), short_time(item.dead_lettered_at), _repair_cell(item.repair)),
            lines(item.purpose.value, item.failure_class.value),
            lines(item.destination, f"{item.channel.value}, {item.attempts}"),
        )
    return rows


def message_list_table(items: tuple[MessageSummary, ...]) -> Table:
    """The page as a table, newest first; related fields share a column, one per line."""
    rows = table(
        "ID\nCreated (UTC)\nRepaired",
        "Purpose\nState\nReason",
        "Destination\nChannel, tries\nProvider",
        ids=1,
        words=(1,),
    )
    for item in items:
        reason = item.dead_letter_reason.value if item.dead_letter_reason else ""
        repaired = _repair_cell(item.repair) if item.repair or reason else ""
        rows.add_row(
            lines(str(item.id), short_time(item.created_at), repaired),
            lines(item.purpose.value, item.state.value, reason),
            lines(item.destination, f"{item.channel.value}, {item.attempts}", item.provider),
        )
    return rows


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if hasattr(value, "astimezone"):
        return short_time(value)
    return str(value)


def message_tables(detail: MessageDetail) -> tuple[Table, Table]:
    """The message's fields, then its attempt history (related fields stacked per column)."""
    fields = table("Field", "Value", title=f"message {detail.id}")
    for name, value in fields_of(MessageView.of(detail)).items():
        if name != "attempts":
            fields.add_row(name, lines(_cell(value)))
    history = table(
        "#",
        "Outcome\nFailure",
        "Recorded (UTC)\nRetry at (UTC)",
        "Provider\nCode",
        "Detail",
        title="attempts (#*: not counted)",
        words=(1,),
    )
    for attempt in detail.history:
        history.add_row(
            lines(f"{attempt.attempt}{'' if attempt.counted else '*'}"),
            lines(attempt.outcome, attempt.failure_class.value if attempt.failure_class else ""),
            lines(short_time(attempt.recorded_at), short_time(attempt.retry_at)),
            lines(attempt.provider, attempt.code),
            lines(attempt.detail),
        )
    return fields, history
