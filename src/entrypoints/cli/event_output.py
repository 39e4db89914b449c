"""How the tenant events' operator views print as tables that fit 80 columns (related fields
stacked in one column); ``--json`` prints the wire package's views."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from outbox.application.events.views import (
    EventDeadLetter,
    EventDetail,
    EventSummary,
    EventTypeView,
    OrganizationBacklog,
    ParkedAggregate,
)
from outbox.entrypoints.cli.output import lines, short_time, table
from outbox.entrypoints.wire import fields_of
from outbox.entrypoints.wire.events import EventDetailView


def _age(row: OrganizationBacklog) -> float | None:
    return row.oldest_due_age.total_seconds() if row.oldest_due_age is not None else None


def backlog_table(rows: Sequence[OrganizationBacklog]) -> Table:
    """One row per organization: live records, the oldest due age, dead letters and parked."""
    built = table(
        "Organization",
        "Pending\nLeased",
        "Oldest due (s)",
        "Dead letters\nParked aggregates",
        ids=1,
    )
    for row in rows:
        age = _age(row)
        built.add_row(
            lines(row.organization),
            lines(str(row.pending), str(row.leased)),
            lines("" if age is None else f"{age:.1f}"),
            lines(str(row.dead_letters), str(row.parked_aggregates)),
        )
    return built


def event_search_table(items: Sequence[EventSummary]) -> Table:
    """The page, newest first: the event and its sequence, its type, its state."""
    built = table(
        "Event\nSequence\nAppended (UTC)",
        "Type, version\nState, tries\nResolution",
        "Organization\nAggregate",
        ids=1,
    )
    for item in items:
        built.add_row(
            lines(str(item.id), str(item.sequence), short_time(item.appended_at)),
            lines(
                f"{item.event_type} v{item.contract_version}",
                f"{item.state.value}, {item.attempts}",
                item.resolution.value if item.resolution else "",
            ),
            lines(str(item.organization_id), f"{item.aggregate_type}/{item.aggregate_id}"),
        )
    return built


def dead_letter_table(items: Sequence[EventDeadLetter]) -> Table:
    """The page, newest first: the dead letter, its event, its aggregate."""
    built = table(
        "Dead letter\nEvent\nDead at (UTC)",
        "Type, version\nReason, tries\nResolution",
        "Organization\nAggregate",
        ids=1,
    )
    for item in items:
        built.add_row(
            lines(str(item.id), str(item.event_id), short_time(item.dead_lettered_at)),
            lines(
                f"{item.event_type} v{item.contract_version}",
                f"{item.reason}, {item.attempts}",
                item.resolution.value if item.resolution else "unresolved",
            ),
            lines(str(item.organization_id), f"{item.aggregate_type}/{item.aggregate_id}"),
        )
    return built


def parked_table(items: Sequence[ParkedAggregate]) -> Table:
    """The page, newest dead letter first: what parks the aggregate and who waits behind it."""
    built = table(
        "Dead letter\nEvent\nParked since (UTC)",
        "Organization\nAggregate",
        "Type\nReason\nWaiting",
        ids=1,
    )
    for item in items:
        built.add_row(
            lines(str(item.id), str(item.event_id), short_time(item.parked_since)),
            lines(str(item.organization_id), f"{item.aggregate_type}/{item.aggregate_id}"),
            lines(item.event_type, item.reason, str(item.waiting)),
        )
    return built


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if hasattr(value, "astimezone"):
        return short_time(value)
    return str(value)


def event_tables(detail: EventDetail) -> tuple[Table, Table, Table]:
    """The event's fields, its records, then its attempts."""
    fields = table("Field", "Value", title=f"event {detail.id}")
    for name, value in fields_of(EventDetailView.of(detail)).items():
        if name not in ("records", "attempts"):
            fields.add_row(name, lines(_cell(value)))
    records = table(
        "Record\nRepublish of",
        "State, tries\nResolution",
        "Created (UTC)\nFinal (UTC)",
        ids=1,
        title="outbox records",
    )
    for record in detail.records:
        final = record.published_at or record.dead_lettered_at
        state = f"{record.state}, {record.attempts}"
        resolution = record.resolution.value if record.resolution else ""
        records.add_row(
            lines(str(record.id), _cell(record.republish_of)),
            lines(state, resolution),
            lines(short_time(record.created_at), short_time(final)),
        )
    attempts = table(
        "Record",
        "#",
        "Outcome\nFailure",
        "Recorded (UTC)\nCode",
        ids=1,
        title="attempts (#*: not counted)",
        words=(2,),
    )
    for attempt in detail.attempts:
        attempts.add_row(
            lines(str(attempt.record_id)),
            lines(f"{attempt.attempt}{'' if attempt.counted else '*'}"),
            lines(attempt.outcome, attempt.failure_class or ""),
            lines(short_time(attempt.recorded_at), attempt.code),
        )
    return fields, records, attempts


def types_table(types: Sequence[EventTypeView]) -> Table:
    """One row per type: module, versions, retirement, description."""
    built = table("Type\nModule", "Versions", "Retired (UTC)", "Description")
    for t in types:
        built.add_row(
            lines(t.code, t.module),
            lines(", ".join(str(v) for v in t.versions) or "none"),
            lines(short_time(t.retired_at)),
            lines(t.description),
        )
    return built
