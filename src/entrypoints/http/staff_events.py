"""Staff routes over the tenant events outbox: backlog per organization, dead
letters, parked aggregates, one event, republish and release, and search and bulk actions
over a filter (republish, release, cancel).

As the security outbox's staff routes: a bearer session of an active staff member and a
fresh step-up of that session (Elevation-Token) for every route, checked by the database
with every call (403 staff-required or step-up-required otherwise). No answer carries an
event's payload.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated
from uuid import UUID

from litestar import Controller, Response, get, post
from litestar.params import JSONBody, Parameter, QueryParameter
from litestar.status_codes import HTTP_201_CREATED

from outbox.application.events.operations import (
    BACKLOG_MAX,
    BULK_MAX,
    BulkEventCommand,
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
    EventFilter,
    EventState,
    RepairReceipt,
)
from outbox.application.staff import DEFAULT_LIMIT, MAX_LIMIT
from outbox.application.staff import DEFAULT_LIMIT as BACKLOG_LIMIT
from outbox.entrypoints.http.caller import SECURITY, Caller, ElevationToken
from outbox.entrypoints.http.staff_event_schemas import BulkRequest, RepairRequest
from outbox.entrypoints.http.staff_outbox import (
    REPLAYED_HEADER,
    IdempotencyKey,
    Operator,
    staff_actor,
)
from outbox.entrypoints.http.staff_problems import staff_responses
from outbox.entrypoints.wire.events import (
    BulkOutcomeView,
    BulkPreviewView,
    EventBacklogView,
    EventDeadLetterPageView,
    EventDetailView,
    EventSearchPageView,
    ParkedPageView,
    RepairView,
)

Cursor = Annotated[UUID | None, Parameter(description="A dead letter's id (a page cursor).")]
Limit = Annotated[
    int, Parameter(ge=1, le=MAX_LIMIT, description=f"Rows per page (1 to {MAX_LIMIT}).")
]
OrganizationFilter = Annotated[
    UUID | None, QueryParameter(name="organizationId", description="Only this organization's.")
]
DeadLetterId = Annotated[UUID, Parameter(description="The dead letter's id (its record's).")]
EventType = Annotated[
    str | None, QueryParameter(name="eventType", description="Only events of this type.")
]
AggregateType = Annotated[
    str | None, QueryParameter(name="aggregateType", description="Only this aggregate type's.")
]
AggregateId = Annotated[
    str | None, QueryParameter(name="aggregateId", description="Only this aggregate's.")
]
Since = Annotated[
    datetime | None, Parameter(description="Appended at this time or later (ISO 8601).")
]
Until = Annotated[datetime | None, Parameter(description="Appended before this time.")]
READ_PROBLEMS = (
    "validation-error",
    "unauthenticated",
    "staff-required",
    "step-up-required",
    "service-unavailable",
)
REPAIR_PROBLEMS = (
    *READ_PROBLEMS,
    "not-found",
    "repair-refused",
    "request-in-progress",
    "idempotency-key-reused",
)


def _filter(  # noqa: PLR0917 - one per query parameter
    event_type: str | None,
    organization_id: UUID | None,
    aggregate_type: str | None,
    aggregate_id: str | None,
    since: datetime | None,
    until: datetime | None,
) -> EventFilter:
    return EventFilter(
        event_type=event_type,
        organization_id=organization_id,
        aggregate_type=aggregate_type,
        aggregate_id=aggregate_id,
        since=since,
        until=until,
    )


def _created(receipt: RepairReceipt) -> Response[RepairView]:
    headers = {REPLAYED_HEADER: "true"} if receipt.replayed else {}
    return Response(RepairView.of(receipt), status_code=HTTP_201_CREATED, headers=headers)


class StaffEventsController(Controller):
    """The platform staff's view of the tenant events outbox."""

    path = "/platform-admin/tenant-events"
    tags = ["staff"]  # noqa: RUF012 - Litestar reads a class attribute
    security = SECURITY

    @get(
        "/backlog",
        summary="Per organization: live events, oldest due age, dead letters, parked aggregates",
        responses=staff_responses(*READ_PROBLEMS),
    )
    async def backlog(
        self,
        operator: Operator,
        principal: Caller,
        *,
        limit: Annotated[int, Parameter(ge=1, le=BACKLOG_MAX)] = BACKLOG_LIMIT,
        elevation_token: ElevationToken = None,
    ) -> EventBacklogView:
        """The largest backlogs first."""
        actor = await staff_actor(operator, principal, elevation_token)
        rows = await operator.events.show_backlog(EventBacklogQuery(actor=actor, limit=limit))
        return EventBacklogView.of(rows)

    @get(
        "/dead-letters",
        summary="Dead letters, newest first, in keyset pages, with what became of each",
        description="Give at most one cursor: after (older rows) or before (newer rows).",
        responses=staff_responses(*READ_PROBLEMS),
    )
    async def dead_letters(
        self,
        operator: Operator,
        principal: Caller,
        *,
        organization_id: OrganizationFilter = None,
        unresolved: Annotated[
            bool, Parameter(description="Only those that still park their aggregate.")
        ] = False,
        after: Cursor = None,
        before: Cursor = None,
        limit: Limit = DEFAULT_LIMIT,
        elevation_token: ElevationToken = None,
    ) -> EventDeadLetterPageView:
        """One page."""
        actor = await staff_actor(operator, principal, elevation_token)
        page = await operator.events.list_dead_letters(
            EventDeadLetterQuery(
                actor=actor,
                organization_id=organization_id,
                unresolved_only=unresolved,
                after=after,
                before=before,
                limit=limit,
            )
        )
        return EventDeadLetterPageView.of(page)

    @get(
        "/parked-aggregates",
        summary="Aggregates a dead letter parks, newest first, with how many events wait",
        responses=staff_responses(*READ_PROBLEMS),
    )
    async def parked(
        self,
        operator: Operator,
        principal: Caller,
        *,
        organization_id: OrganizationFilter = None,
        after: Cursor = None,
        before: Cursor = None,
        limit: Limit = DEFAULT_LIMIT,
        elevation_token: ElevationToken = None,
    ) -> ParkedPageView:
        """One page."""
        actor = await staff_actor(operator, principal, elevation_token)
        page = await operator.events.list_parked(
            ParkedQuery(
                actor=actor,
                organization_id=organization_id,
                after=after,
                before=before,
                limit=limit,
            )
        )
        return ParkedPageView.of(page)

    @get(
        "/events/{event_id:uuid}",
        summary="One event (its payload's size, never the payload), its records and attempts",
        responses=staff_responses(*READ_PROBLEMS, "not-found"),
    )
    async def event(
        self,
        event_id: Annotated[UUID, Parameter(description="The event's id.")],
        operator: Operator,
        principal: Caller,
        elevation_token: ElevationToken = None,
    ) -> EventDetailView:
        """The event."""
        actor = await staff_actor(operator, principal, elevation_token)
        detail = await operator.events.show_event(EventQuery(event_id=event_id, actor=actor))
        return EventDetailView.of(detail)

    @post(
        "/dead-letters/{dead_letter_id:uuid}/republications",
        status_code=HTTP_201_CREATED,
        summary="Republish a dead letter: a new record of its event, before the later ones",
        description=(
            "Needs an Idempotency-Key and a fresh step-up. The dead record stays as it was; a"
            " new one goes before the aggregate's later events; audited with the reason."
            " Refused (409 repair-refused) when the dead letter was already released or"
            f" republished. A replay answers 201 with the first result and {REPLAYED_HEADER}:"
            " true."
        ),
        responses=staff_responses(*REPAIR_PROBLEMS),
    )
    async def republish(
        self,
        dead_letter_id: DeadLetterId,
        data: JSONBody[RepairRequest],
        idempotency_key: IdempotencyKey,
        *,
        operator: Operator,
        principal: Caller,
        elevation_token: ElevationToken = None,
    ) -> Response[RepairView]:
        """Republish once per key."""
        actor = await staff_actor(operator, principal, elevation_token)
        receipt = await operator.events.republish(
            RepublishCommand(
                actor=actor,
                dead_letter_id=dead_letter_id,
                reason=data.reason,
                idempotency_key=idempotency_key,
            )
        )
        return _created(receipt)

    @post(
        "/dead-letters/{dead_letter_id:uuid}/releases",
        status_code=HTTP_201_CREATED,
        summary="Release a parked aggregate: the dead letter stays dead, the later events flow",
        description=(
            "Needs an Idempotency-Key and a fresh step-up; audited with the reason; refused"
            " and replayed as a republication."
        ),
        responses=staff_responses(*REPAIR_PROBLEMS),
    )
    async def release(
        self,
        dead_letter_id: DeadLetterId,
        data: JSONBody[RepairRequest],
        idempotency_key: IdempotencyKey,
        *,
        operator: Operator,
        principal: Caller,
        elevation_token: ElevationToken = None,
    ) -> Response[RepairView]:
        """Release once per key."""
        actor = await staff_actor(operator, principal, elevation_token)
        receipt = await operator.events.release(
            ReleaseCommand(
                actor=actor,
                dead_letter_id=dead_letter_id,
                reason=data.reason,
                idempotency_key=idempotency_key,
            )
        )
        return _created(receipt)

    @get(
        "/events",
        summary="Search events by state, type, organization, aggregate and append time",
        description=(
            "Newest first; pass pageInfo.endCursor as before for the next page. The state is"
            " that of the event's current record."
        ),
        responses=staff_responses(*READ_PROBLEMS),
    )
    async def search(
        self,
        operator: Operator,
        principal: Caller,
        *,
        record_state: Annotated[
            EventState | None,
            QueryParameter(name="state", description="pending, leased, published, dead_lettered"),
        ] = None,
        event_type: EventType = None,
        organization_id: OrganizationFilter = None,
        aggregate_type: AggregateType = None,
        aggregate_id: AggregateId = None,
        since: Since = None,
        until: Until = None,
        before: Annotated[int | None, Parameter(ge=1, description="A sequence (cursor).")] = None,
        limit: Limit = DEFAULT_LIMIT,
        elevation_token: ElevationToken = None,
    ) -> EventSearchPageView:
        """One page."""
        actor = await staff_actor(operator, principal, elevation_token)
        where = _filter(event_type, organization_id, aggregate_type, aggregate_id, since, until)
        page = await operator.events.search(
            EventSearchQuery(
                actor=actor, state=record_state, where=where, before=before, limit=limit
            )
        )
        return EventSearchPageView.of(page)

    @get(
        "/bulk-preview",
        summary="How many events a bulk action would change, and as of when",
        description=(
            "republish and release count the unresolved dead letters the filter matches,"
            " cancel its pending events: exactly what the action would change. Send asOf"
            " back with the action: nothing that arrived later is touched."
        ),
        responses=staff_responses(*READ_PROBLEMS),
    )
    async def bulk_preview(
        self,
        operator: Operator,
        principal: Caller,
        *,
        action: Annotated[BulkEventAction, Parameter(description="republish, release, cancel")],
        event_type: EventType = None,
        organization_id: OrganizationFilter = None,
        aggregate_type: AggregateType = None,
        aggregate_id: AggregateId = None,
        since: Since = None,
        until: Until = None,
        elevation_token: ElevationToken = None,
    ) -> BulkPreviewView:
        """The count."""
        actor = await staff_actor(operator, principal, elevation_token)
        where = _filter(event_type, organization_id, aggregate_type, aggregate_id, since, until)
        preview = await operator.events.preview_bulk(
            BulkEventQuery(actor=actor, action=action, where=where)
        )
        return BulkPreviewView.of(preview)

    @post(
        "/bulk-actions",
        status_code=HTTP_201_CREATED,
        summary="Republish, release or cancel every event a filter matches (audited, each)",
        description=(
            f"Needs an Idempotency-Key and a fresh step-up. At most {BULK_MAX} events per"
            " request, in append order; remaining says how many still match. Sending the same"
            " request again changes nothing more (those count as replayed)."
        ),
        responses=staff_responses(*READ_PROBLEMS),
    )
    async def bulk_action(
        self,
        data: JSONBody[BulkRequest],
        idempotency_key: IdempotencyKey,
        *,
        operator: Operator,
        principal: Caller,
        elevation_token: ElevationToken = None,
    ) -> BulkOutcomeView:
        """Apply it."""
        actor = await staff_actor(operator, principal, elevation_token)
        where = _filter(
            data.event_type,
            data.organization_id,
            data.aggregate_type,
            data.aggregate_id,
            data.since,
            data.until,
        )
        outcome = await operator.events.bulk_repair(
            BulkEventCommand(
                actor=actor,
                action=data.action,
                where=where,
                as_of=data.as_of,
                reason=data.reason,
                idempotency_key=idempotency_key,
                limit=data.limit,
            )
        )
        return BulkOutcomeView.of(outcome)
