"""How the tenant events' operator views print: camelCase JSON as the staff routes answer it,
and tables that fit 80 columns (related fields stacked in one column)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from outbox.application.operator.event_views import (
    EventDeadLetter,
    EventDetail,
    EventRecord,
    EventTypeView,
    OrganizationBacklog,
    ParkedAggregate,
    PublicationAttempt,
    RepairReceipt,
)
from outbox.entrypoints.cli.output import lines, short_time, table


def _age(row: OrganizationBacklog) -> float | None:
    return row.oldest_due_age.total_seconds() if row.oldest_due_age is not None else None


def backlog_json(rows: Sequence[OrganizationBacklog]) -> dict[str, Any]:
    """The organizations as JSON, the largest backlog first."""
    return {
        "items": [
            {
                "organizationId": row.organization,
                "pending": row.pending,
                "leased": row.leased,
                "oldestDueAgeSeconds": _age(row),
                "deadLetters": row.dead_letters,
                "parkedAggregates": row.parked_aggregates,
            }
            for row in rows
        ]
    }


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


def dead_letter_json(item: EventDeadLetter) -> dict[str, Any]:
    """One dead letter as JSON (never the payload)."""
    return {
        "id": item.id,
        "eventId": item.event_id,
        "organizationId": item.organization_id,
        "eventType": item.event_type,
        "contractVersion": item.contract_version,
        "aggregateType": item.aggregate_type,
        "aggregateId": item.aggregate_id,
        "reason": item.reason,
        "attemptCount": item.attempts,
        "deadLetteredAt": item.dead_lettered_at,
        "resolution": item.resolution.value if item.resolution else None,
        "resolvedAt": item.resolved_at,
        "resolvedBy": item.resolved_by,
        "republishedAs": item.republished_as,
    }


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


def parked_json(item: ParkedAggregate) -> dict[str, Any]:
    """One parked aggregate as JSON."""
    return {
        "deadLetterId": item.id,
        "organizationId": item.organization_id,
        "aggregateType": item.aggregate_type,
        "aggregateId": item.aggregate_id,
        "eventId": item.event_id,
        "eventType": item.event_type,
        "reason": item.reason,
        "parkedSince": item.parked_since,
        "waiting": item.waiting,
    }


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


def _record_json(record: EventRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "state": record.state,
        "attemptCount": record.attempts,
        "republishOf": record.republish_of,
        "createdAt": record.created_at,
        "availableAt": record.available_at,
        "leaseOwner": record.lease_owner,
        "leaseExpiresAt": record.lease_expires_at,
        "publishedAt": record.published_at,
        "deadLetteredAt": record.dead_lettered_at,
        "deadLetterReason": record.dead_letter_reason,
        "resolution": record.resolution.value if record.resolution else None,
        "resolvedAt": record.resolved_at,
        "resolvedBy": record.resolved_by,
        "republishedAs": record.republished_as,
    }


def _attempt_json(attempt: PublicationAttempt) -> dict[str, Any]:
    return {
        "recordId": attempt.record_id,
        "attempt": attempt.attempt,
        "counted": attempt.counted,
        "outcome": attempt.outcome,
        "failureClass": attempt.failure_class,
        "code": attempt.code,
        "target": attempt.target,
        "recordedAt": attempt.recorded_at,
        "retryAt": attempt.retry_at,
    }


def event_json(detail: EventDetail) -> dict[str, Any]:
    """One event as JSON: its metadata (its payload's size, never the payload), its records
    and its attempts."""
    return {
        "id": detail.id,
        "organizationId": detail.organization_id,
        "eventType": detail.event_type,
        "contractVersion": detail.contract_version,
        "producerModule": detail.producer_module,
        "aggregateType": detail.aggregate_type,
        "aggregateId": detail.aggregate_id,
        "appendSequence": detail.append_sequence,
        "occurredAt": detail.occurred_at,
        "appendedAt": detail.appended_at,
        "payloadBytes": detail.payload_bytes,
        "traceContext": detail.trace_context,
        "publicationSequence": detail.publication_sequence,
        "publishedAt": detail.published_at,
        "records": [_record_json(r) for r in detail.records],
        "attempts": [_attempt_json(a) for a in detail.attempts],
    }


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if hasattr(value, "astimezone"):
        return short_time(value)
    return str(value)


def event_tables(detail: EventDetail) -> tuple[Table, Table, Table]:
    """The event's fields, its records, then its attempts."""
    fields = table("Field", "Value", title=f"event {detail.id}")
    for name, value in event_json(detail).items():
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


def receipt_json(receipt: RepairReceipt) -> dict[str, Any]:
    """A republish or release receipt as JSON, as the staff route answers it."""
    return {
        "action": receipt.action.value,
        "deadLetterId": receipt.dead_letter_id,
        "recordId": receipt.record_id,
        "replayed": receipt.replayed,
    }


def types_json(types: Sequence[EventTypeView]) -> dict[str, Any]:
    """The event types as JSON."""
    return {
        "items": [
            {
                "code": t.code,
                "module": t.module,
                "description": t.description,
                "versions": list(t.versions),
                "retiredAt": t.retired_at,
            }
            for t in types
        ]
    }


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
