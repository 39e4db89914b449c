"""``outboxctl events backlog|list|dead-letters|parked|show|republish|release|bulk``: operate
the tenant events outbox as the database operator; ``events demo`` appends sample events
in development."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated
from uuid import UUID

import typer

from outbox.application.events.operations import (
    BACKLOG_MAX,
    BULK_MAX,
    BulkEventCommand,
    BulkEventPreview,
    BulkEventQuery,
    EventBacklogQuery,
    EventDeadLetterQuery,
    EventQuery,
    EventSearchQuery,
    ParkedQuery,
    ReleaseCommand,
    RepublishCommand,
)
from outbox.application.events.views import (
    BulkEventAction,
    BulkOutcome,
    EventFilter,
    EventState,
    RepairReceipt,
)
from outbox.application.staff import DEFAULT_LIMIT, MAX_LIMIT
from outbox.application.staff import DEFAULT_LIMIT as BACKLOG_LIMIT
from outbox.entrypoints.bootstrap.events_demo import DemoReceipt, run_events_demo
from outbox.entrypoints.cli.event_output import (
    backlog_table,
    dead_letter_table,
    event_search_table,
    event_tables,
    parked_table,
    types_table,
)
from outbox.entrypoints.cli.exit_codes import ExitCode
from outbox.entrypoints.cli.guard import fail
from outbox.entrypoints.cli.operator_output import page_hints
from outbox.entrypoints.cli.operator_run import operator_guarded, run_operator
from outbox.entrypoints.cli.options import AsJson, IdempotencyKey, Reason, StaffEmail
from outbox.entrypoints.cli.output import print_json, print_table
from outbox.entrypoints.cli.startup import start
from outbox.entrypoints.wire.events import (
    BulkOutcomeView,
    BulkPreviewView,
    EventBacklogView,
    EventDeadLetterPageView,
    EventDetailView,
    EventSearchPageView,
    EventTypesView,
    ParkedPageView,
    RepairView,
)

if TYPE_CHECKING:  # the services' module loads with the command that runs them
    from outbox.application.operator.services import OperatorServices

events_app = typer.Typer(
    help="Operate the tenant events outbox: backlog, dead letters, parked aggregates, repairs.",
    no_args_is_help=True,
)

Organization = Annotated[
    UUID | None, typer.Option("--organization", help="Only this organization's.")
]
After = Annotated[
    UUID | None, typer.Option(help="Show the page of older rows after this dead letter.")
]
Before = Annotated[
    UUID | None, typer.Option(help="Show the page of newer rows before this dead letter.")
]
Limit = Annotated[int, typer.Option(min=1, max=MAX_LIMIT, help="Rows per page.")]
DeadLetterId = Annotated[UUID, typer.Argument(help="The dead letter's id (its record's).")]
TIME_FORMATS = ["%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d"]
EventType = Annotated[str | None, typer.Option("--type", help="Only events of this type.")]
AggregateType = Annotated[
    str | None, typer.Option("--aggregate-type", help="Only this aggregate type's.")
]
Aggregate = Annotated[str | None, typer.Option("--aggregate", help="Only this aggregate's.")]
Since = Annotated[
    datetime | None,
    typer.Option(
        formats=TIME_FORMATS, help="Appended at this time or later (ISO 8601; UTC by default)."
    ),
]
Until = Annotated[
    datetime | None,
    typer.Option(formats=TIME_FORMATS, help="Appended before this time (ISO 8601)."),
]


def _utc(value: datetime | None) -> datetime | None:
    return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value


def _filter(  # noqa: PLR0917 - one per option
    event_type: str | None,
    organization: UUID | None,
    aggregate_type: str | None,
    aggregate: str | None,
    since: datetime | None,
    until: datetime | None,
) -> EventFilter:
    return EventFilter(
        event_type=event_type,
        organization_id=organization,
        aggregate_type=aggregate_type,
        aggregate_id=aggregate,
        since=_utc(since),
        until=_utc(until),
    )


@events_app.command("backlog")
def backlog(
    limit: Annotated[
        int, typer.Option(min=1, max=BACKLOG_MAX, help="Organizations at most.")
    ] = BACKLOG_LIMIT,
    as_json: AsJson = False,
) -> None:
    """Per organization: pending and leased events, how long the oldest due one has waited,
    unresolved dead letters and the aggregates they park; the largest backlog first."""
    rows = run_operator(
        lambda services: services.events.show_backlog(EventBacklogQuery(limit=limit))
    )
    if as_json:
        print_json(EventBacklogView.of(rows))
        return
    if not rows:
        typer.echo("no tenant event waits")
        return
    print_table(backlog_table(rows))


@events_app.command("list")
def list_events(
    *,
    state: Annotated[
        EventState | None, typer.Option(help="The state of the event's current record.")
    ] = None,
    event_type: EventType = None,
    organization: Organization = None,
    aggregate_type: AggregateType = None,
    aggregate: Aggregate = None,
    since: Since = None,
    until: Until = None,
    before: Annotated[
        int | None, typer.Option(min=1, help="Show older events: below this sequence.")
    ] = None,
    limit: Limit = DEFAULT_LIMIT,
    as_json: AsJson = False,
) -> None:
    """Search events, newest first, by state, type, organization, aggregate and append time.

    --json prints {"items": [...], "pageInfo": {...}}: pass pageInfo.endCursor as --before for
    the next page.
    """
    query = EventSearchQuery(
        state=state,
        where=_filter(event_type, organization, aggregate_type, aggregate, since, until),
        before=before,
        limit=limit,
    )
    page = run_operator(lambda services: services.events.search(query))
    if as_json:
        print_json(EventSearchPageView.of(page))
        return
    if not page.items:
        typer.echo("no event matches")
        return
    print_table(event_search_table(page.items))
    if page.older is not None:
        typer.echo(f"older: add --before {page.older}", err=True)


@events_app.command("bulk")
def bulk(
    action: Annotated[
        BulkEventAction,
        typer.Argument(
            help="republish or release the unresolved dead letters the filter matches, or"
            " cancel its pending events."
        ),
    ],
    staff: StaffEmail,
    reason: Reason,
    *,
    event_type: EventType = None,
    organization: Organization = None,
    aggregate_type: AggregateType = None,
    aggregate: Aggregate = None,
    since: Since = None,
    until: Until = None,
    limit: Annotated[
        int, typer.Option(min=1, max=BULK_MAX, help="Change at most this many (append order).")
    ] = BULK_MAX,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only count what the action would change.")
    ] = False,
    idempotency_key: IdempotencyKey = None,
    as_json: AsJson = False,
) -> None:
    """Republish, release or cancel every event a filter matches, in the named staff
    member's name: each one audited with the reason. Counts first; changes only what the
    action changes (a resolved dead letter, a published event, are left alone), only what
    matched when it counted, at most --limit; says how many still match."""
    where = _filter(event_type, organization, aggregate_type, aggregate, since, until)

    async def act(services: OperatorServices) -> tuple[BulkEventPreview, BulkOutcome | None]:
        actor = await services.resolve_staff_member(staff)
        preview = await services.events.preview_bulk(
            BulkEventQuery(actor=actor, action=action, where=where)
        )
        if dry_run or preview.count == 0:
            return preview, None
        outcome = await services.events.bulk_repair(
            BulkEventCommand(
                actor=actor,
                action=action,
                where=where,
                as_of=preview.as_of,
                reason=reason,
                idempotency_key=idempotency_key,
                limit=limit,
            )
        )
        return preview, outcome

    preview, outcome = run_operator(act)
    if as_json:
        print_json(BulkPreviewView.of(preview) if outcome is None else BulkOutcomeView.of(outcome))
        return
    typer.echo(f"{preview.count} {action.subject} match")
    if outcome is None:
        return
    typer.echo(
        f"{action.done} {outcome.changed}; {outcome.replayed} by an earlier run of this"
        f" request; {outcome.remaining} still match"
    )


@events_app.command("dead-letters")
def dead_letters(
    *,
    organization: Organization = None,
    unresolved: Annotated[
        bool, typer.Option("--unresolved", help="Only those that still park their aggregate.")
    ] = False,
    after: After = None,
    before: Before = None,
    limit: Limit = DEFAULT_LIMIT,
    as_json: AsJson = False,
) -> None:
    """List dead letters, newest first, with what became of each (released, republished).

    --json prints {"items": [...], "pageInfo": {...}}: pass pageInfo.endCursor as --after for
    the next page.
    """
    query = EventDeadLetterQuery(
        organization_id=organization,
        unresolved_only=unresolved,
        after=after,
        before=before,
        limit=limit,
    )
    page = run_operator(lambda services: services.events.list_dead_letters(query))
    if as_json:
        print_json(EventDeadLetterPageView.of(page))
        return
    if not page.items:
        typer.echo("no dead letters")
        return
    print_table(dead_letter_table(page.items))
    for hint in page_hints(page):
        typer.echo(hint, err=True)


@events_app.command("parked")
def parked(
    *,
    organization: Organization = None,
    after: After = None,
    before: Before = None,
    limit: Limit = DEFAULT_LIMIT,
    as_json: AsJson = False,
) -> None:
    """List parked aggregates (a dead letter holds their later events), newest first, with
    how many events wait behind each. Repair with republish or release."""
    query = ParkedQuery(organization_id=organization, after=after, before=before, limit=limit)
    page = run_operator(lambda services: services.events.list_parked(query))
    if as_json:
        print_json(ParkedPageView.of(page))
        return
    if not page.items:
        typer.echo("no parked aggregates")
        return
    print_table(parked_table(page.items))
    for hint in page_hints(page):
        typer.echo(hint, err=True)


@events_app.command("show")
def show(
    event_id: Annotated[UUID, typer.Argument(help="The event's id.")],
    as_json: AsJson = False,
) -> None:
    """Show one event (its payload's size, never the payload), its records and attempts."""
    detail = run_operator(
        lambda services: services.events.show_event(EventQuery(event_id=event_id))
    )
    if as_json:
        print_json(EventDetailView.of(detail))
        return
    for part in event_tables(detail):
        print_table(part)


def _report(receipt: RepairReceipt, as_json: bool) -> None:
    if as_json:
        print_json(RepairView.of(receipt))
        return
    done = {"republish": "republished", "release": "released"}[receipt.action.value]
    done = "already " + done if receipt.replayed else done
    record = f" as {receipt.record_id}" if receipt.record_id else ""
    typer.echo(f"{done} {receipt.dead_letter_id}{record}")


@events_app.command("republish")
def republish(
    dead_letter_id: DeadLetterId,
    staff: StaffEmail,
    reason: Reason,
    idempotency_key: IdempotencyKey = None,
    as_json: AsJson = False,
) -> None:
    """Publish a dead-lettered event again: a new record of it, before its aggregate's later
    events (the dead one stays as it was). Audited."""

    async def act(services: OperatorServices) -> RepairReceipt:
        actor = await services.resolve_staff_member(staff)
        return await services.events.republish(
            RepublishCommand(
                actor=actor,
                dead_letter_id=dead_letter_id,
                reason=reason,
                idempotency_key=idempotency_key,
            )
        )

    _report(run_operator(act), as_json)


@events_app.command("release")
def release(
    dead_letter_id: DeadLetterId,
    staff: StaffEmail,
    reason: Reason,
    idempotency_key: IdempotencyKey = None,
    as_json: AsJson = False,
) -> None:
    """Release a parked aggregate: the dead letter stays dead (never published) and the
    aggregate's later events flow. Audited."""

    async def act(services: OperatorServices) -> RepairReceipt:
        actor = await services.resolve_staff_member(staff)
        return await services.events.release(
            ReleaseCommand(
                actor=actor,
                dead_letter_id=dead_letter_id,
                reason=reason,
                idempotency_key=idempotency_key,
            )
        )

    _report(run_operator(act), as_json)


@events_app.command("types")
def types(as_json: AsJson = False) -> None:
    """List the registered event types: owner module, published contract versions, and when
    each was retired (a retired type takes no new events)."""
    found = run_operator(lambda services: services.events.list_types())
    if as_json:
        print_json(EventTypesView.of(found))
        return
    if not found:
        typer.echo("no event types are registered")
        return
    print_table(types_table(found))


DEMO_HINT = "watch them drain: outboxctl events backlog (a running worker publishes them)"


@events_app.command("demo")
def demo(
    organizations: Annotated[
        int, typer.Option(min=1, max=20, help="Random organizations to spread the events over.")
    ] = 2,
    events: Annotated[int, typer.Option(min=1, max=1000, help="Events to append.")] = 20,
    as_json: AsJson = False,
) -> None:
    """Development only: onboard module demo (idempotent) and append order-placed events for
    a few random organizations as its producer role, for the worker to publish."""
    settings = start()
    if not settings.is_development:
        raise fail(
            "refused: outboxctl events demo appends sample events and runs only with"
            f" OUTBOX_ENV=development (this is {settings.environment.value})",
            ExitCode.REFUSED,
        )
    with operator_guarded():
        receipt = asyncio.run(run_events_demo(settings, organizations=organizations, count=events))
    if as_json:
        print_json(_demo_json(receipt))
    else:
        typer.echo(
            f"appended {receipt.appended} {receipt.event_type} events as"
            f" {receipt.producer_role} for {len(receipt.by_organization)} organizations:"
        )
        for organization, count in receipt.by_organization.items():
            typer.echo(f"  {organization}  {count}")
    typer.echo(DEMO_HINT, err=True)


def _demo_json(receipt: DemoReceipt) -> dict[str, object]:
    return {
        "module": receipt.module,
        "eventType": receipt.event_type,
        "producerRole": receipt.producer_role,
        "appended": receipt.appended,
        "organizations": [
            {"organizationId": str(organization), "appended": count}
            for organization, count in receipt.by_organization.items()
        ],
        "hint": DEMO_HINT,
    }
