"""How operator views print: JSON in the HTTP API's field names, and tables that fit 80 columns.

Every key is the camelCase name the staff routes use for the same field (``attemptCount``,
``deadLetteredAt``, ``pageInfo``); views the API does not serve follow the same casing.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table

from outbox.application.operator.views import (
    AttemptView,
    Backlog,
    CopyReceipt,
    DeadLetterSummary,
    KeysetPage,
    MessageDetail,
    MessageSummary,
    Repair,
)
from outbox.entrypoints.cli.output import lines, short_time, table


def backlog_json(backlog: Backlog) -> dict[str, Any]:
    """The backlog as JSON: every state, and the age in seconds (null when nothing is due)."""
    age = backlog.oldest_due_age
    return {
        "messages": {
            "pending": backlog.pending,
            "leased": backlog.leased,
            "published": backlog.published,
            "deadLettered": backlog.dead_lettered,
        },
        "oldestDueAgeSeconds": age.total_seconds() if age is not None else None,
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
        rows.add_row(lines(state.value), lines(str(count)))
    return rows


def page_json(page: KeysetPage[Any], items: list[dict[str, Any]]) -> dict[str, Any]:
    """A keyset page as the staff routes answer it: the items and where the list goes on.

    Pass ``endCursor`` as ``--after`` for the next (older) page and ``startCursor`` as
    ``--before`` for the previous (newer) one.
    """
    return {
        "items": items,
        "pageInfo": {
            "hasNextPage": page.has_older,
            "hasPreviousPage": page.has_newer,
            "startCursor": page.newer_cursor,
            "endCursor": page.older_cursor,
        },
    }


def page_hints(page: KeysetPage[Any]) -> list[str]:
    """Where the list goes on, as the option to add (printed on stderr under a table)."""
    hints = []
    if page.older_cursor is not None:
        hints.append(f"older: add --after {page.older_cursor}")
    if page.newer_cursor is not None:
        hints.append(f"newer: add --before {page.newer_cursor}")
    return hints


def repair_json(repair: Repair | None) -> dict[str, Any] | None:
    """What became of a dead letter, or None when it was never repaired."""
    if repair is None:
        return None
    return {"action": repair.action.value, "messageId": repair.message_id, "at": repair.at}


def _repair_cell(repair: Repair | None) -> str:
    """``reissued``, ``requeued`` or ``no``; the JSON and ``messages show`` name the copy."""
    return "no" if repair is None else f"{repair.action.value}d"


def dead_letter_json(item: DeadLetterSummary) -> dict[str, Any]:
    """One dead letter as JSON (the destination is masked)."""
    return {
        "id": item.id,
        "purpose": item.purpose.value,
        "channel": item.channel.value,
        "destination": item.destination,
        "attemptCount": item.attempts,
        "failureClass": item.failure_class.value,
        "deadLetteredAt": item.dead_lettered_at,
        "expiresAt": item.expires_at,
        "repair": repair_json(item.repair),
    }


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


def message_summary_json(item: MessageSummary) -> dict[str, Any]:
    """One row of the message list as JSON (the destination is masked)."""
    return {
        "id": item.id,
        "purpose": item.purpose.value,
        "channel": item.channel.value,
        "destination": item.destination,
        "state": item.state.value,
        "attemptCount": item.attempts,
        "createdAt": item.created_at,
        "deadLetterReason": item.dead_letter_reason.value if item.dead_letter_reason else None,
        "provider": item.provider or None,
        "repair": repair_json(item.repair),
    }


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


def attempt_json(attempt: AttemptView) -> dict[str, Any]:
    """One recorded attempt as JSON."""
    return {
        "attempt": attempt.attempt,
        "counted": attempt.counted,
        "outcome": attempt.outcome,
        "failureClass": attempt.failure_class.value if attempt.failure_class else None,
        "code": attempt.code,
        "detail": attempt.detail,
        "provider": attempt.provider,
        "providerMessageId": attempt.provider_message_id,
        "recordedAt": attempt.recorded_at,
        "retryAt": attempt.retry_at,
    }


def message_json(detail: MessageDetail) -> dict[str, Any]:
    """One message as JSON, masked, with its attempts."""
    return {
        "id": detail.id,
        "purpose": detail.purpose.value,
        "channel": detail.channel.value,
        "destination": detail.destination,
        "subjectId": detail.subject_id,
        "template": detail.template,
        "locale": detail.locale,
        "state": detail.state.value,
        "attemptCount": detail.attempts,
        "createdAt": detail.created_at,
        "availableAt": detail.available_at,
        "expiresAt": detail.expires_at,
        "leaseOwner": detail.lease_owner,
        "leaseExpiresAt": detail.lease_expires_at,
        "publishedAt": detail.published_at,
        "deadLetteredAt": detail.dead_lettered_at,
        "deadLetterReason": detail.dead_letter_reason.value if detail.dead_letter_reason else None,
        "hasSecret": detail.has_secret,
        "reissuedAs": detail.reissued_as,
        "attempts": [attempt_json(a) for a in detail.history],
    }


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if hasattr(value, "astimezone"):
        return short_time(value)
    return str(value)


def message_tables(detail: MessageDetail) -> tuple[Table, Table]:
    """The message's fields, then its attempt history (related fields stacked per column)."""
    fields = table("Field", "Value", title=f"message {detail.id}")
    for name, value in message_json(detail).items():
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


def receipt_json(receipt: CopyReceipt) -> dict[str, Any]:
    """A reissue or requeue receipt as JSON, as the staff route answers it."""
    return {
        "deadLetterId": receipt.dead_letter_id,
        "messageId": receipt.message_id,
        "expiresAt": receipt.expires_at,
        "replayed": receipt.replayed,
    }
