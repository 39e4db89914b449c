"""How operator views print: JSON for ``--json`` (stdout only JSON) and rich tables."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from application.operator.views import (
    AttemptView,
    Backlog,
    CopyReceipt,
    DeadLetterSummary,
    MessageDetail,
)


def timestamp(value: datetime | None) -> str | None:
    """An ISO 8601 UTC timestamp, or None."""
    return value.astimezone(UTC).isoformat() if value is not None else None


def short_time(value: datetime | None) -> str:
    """A timestamp for a table cell: UTC, to the second."""
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") if value is not None else ""


def table(*headers: str, ids: int = 0, **options: Any) -> Table:
    """A table whose first ``ids`` columns hold ids (never cut: they are copied into the next
    command) and whose other cells fold rather than lose characters."""
    built = Table(**options)
    for index, header in enumerate(headers):
        if index < ids:
            built.add_column(header, no_wrap=True, min_width=36)
        else:
            built.add_column(header, overflow="fold")
    return built


def print_json(value: Any) -> None:
    """Write ``value`` as one JSON document on stdout."""
    typer.echo(json.dumps(value))


# Wide enough for an id, a masked address and a timestamp side by side when stdout is not a
# terminal (a pipe, a log); a terminal's own width wins.
PIPE_WIDTH = 160


def print_table(rows: Table) -> None:
    """Write a rich table on stdout."""
    console = Console()
    if not console.is_terminal:
        console = Console(width=PIPE_WIDTH)
    console.print(rows)


def backlog_json(backlog: Backlog) -> dict[str, Any]:
    """The backlog as JSON: every state, and the age in seconds (null when nothing is due)."""
    age = backlog.oldest_due_age
    return {
        "messages": {state.value: count for state, count in backlog.by_state().items()},
        "oldest_due_age_seconds": age.total_seconds() if age is not None else None,
    }


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
        rows.add_row(state.value, str(count))
    return rows


def dead_letter_json(item: DeadLetterSummary) -> dict[str, Any]:
    """One dead letter as JSON (the destination is masked)."""
    return {
        "id": str(item.id),
        "purpose": item.purpose.value,
        "channel": item.channel.value,
        "destination": item.destination,
        "attempt_count": item.attempts,
        "failure_class": item.failure_class.value,
        "dead_lettered_at": timestamp(item.dead_lettered_at),
        "expires_at": timestamp(item.expires_at),
    }


def dead_letter_table(items: tuple[DeadLetterSummary, ...]) -> Table:
    """The page as a table, newest first."""
    rows = table(
        "ID", "Purpose", "Channel", "Destination", "Tries", "Failure", "Dead at (UTC)", ids=1
    )
    for item in items:
        rows.add_row(
            str(item.id),
            item.purpose.value,
            item.channel.value,
            item.destination,
            str(item.attempts),
            item.failure_class.value,
            short_time(item.dead_lettered_at),
        )
    return rows


def attempt_json(attempt: AttemptView) -> dict[str, Any]:
    """One recorded attempt as JSON."""
    return {
        "attempt": attempt.attempt,
        "counted": attempt.counted,
        "outcome": attempt.outcome,
        "failure_class": attempt.failure_class.value if attempt.failure_class else None,
        "code": attempt.code,
        "provider": attempt.provider,
        "provider_message_id": attempt.provider_message_id,
        "recorded_at": timestamp(attempt.recorded_at),
        "retry_at": timestamp(attempt.retry_at),
    }


def message_json(detail: MessageDetail) -> dict[str, Any]:
    """One message as JSON, masked, with its attempts."""
    return {
        "id": str(detail.id),
        "purpose": detail.purpose.value,
        "channel": detail.channel.value,
        "destination": detail.destination,
        "subject_id": str(detail.subject_id) if detail.subject_id else None,
        "template": detail.template,
        "locale": detail.locale,
        "state": detail.state.value,
        "attempt_count": detail.attempts,
        "created_at": timestamp(detail.created_at),
        "available_at": timestamp(detail.available_at),
        "expires_at": timestamp(detail.expires_at),
        "lease_owner": detail.lease_owner,
        "lease_expires_at": timestamp(detail.lease_expires_at),
        "published_at": timestamp(detail.published_at),
        "dead_lettered_at": timestamp(detail.dead_lettered_at),
        "dead_letter_reason": detail.dead_letter_reason.value
        if detail.dead_letter_reason
        else None,
        "has_secret": detail.has_secret,
        "reissued_as": str(detail.reissued_as) if detail.reissued_as else None,
        "attempts": [attempt_json(a) for a in detail.history],
    }


def message_tables(detail: MessageDetail) -> tuple[Table, Table]:
    """The message's fields, then its attempt history."""
    fields = table("Field", "Value", title=f"message {detail.id}")
    for name, value in message_json(detail).items():
        if name != "attempts":
            fields.add_row(name, "" if value is None else str(value))
    history = table(
        "#",
        "Counted",
        "Outcome",
        "Failure",
        "Code",
        "Provider",
        "Recorded (UTC)",
        "Retry (UTC)",
        title="attempts",
    )
    for attempt in detail.history:
        history.add_row(
            str(attempt.attempt),
            "yes" if attempt.counted else "no",
            attempt.outcome,
            attempt.failure_class.value if attempt.failure_class else "",
            attempt.code,
            attempt.provider,
            short_time(attempt.recorded_at),
            short_time(attempt.retry_at),
        )
    return fields, history


def receipt_json(receipt: CopyReceipt) -> dict[str, Any]:
    """A reissue or requeue receipt as JSON."""
    return {
        "dead_letter_id": str(receipt.dead_letter_id),
        "message_id": str(receipt.message_id),
        "expires_at": timestamp(receipt.expires_at),
        "replayed": receipt.replayed,
    }
