"""Staff routes over the consumers of tenant events, on the admin listener: lag, dead
letters, replay, pause and resume; and the workers view.

As every staff route: a bearer session of an active staff member and a step-up
(Elevation-Token), both checked by the database with every call; reads accept a step-up of
the last eight hours, changes need a fresh one and a reason, audited. ``outboxctl
consumers`` and ``outboxctl workers`` do the same as the database operator.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec
from litestar import Controller, get, post
from litestar.params import JSONBody, Parameter
from litestar.status_codes import HTTP_200_OK

from outbox.application.events.consumer_operations import ConsumerReplay
from outbox.application.staff import DEFAULT_LIMIT, MAX_LIMIT, MAX_REASON
from outbox.entrypoints.http.caller import SECURITY, Caller, ElevationToken
from outbox.entrypoints.http.schemas import Body
from outbox.entrypoints.http.staff_outbox import Operator, staff_actor
from outbox.entrypoints.http.staff_problems import staff_responses
from outbox.entrypoints.wire.consumers import (
    ConsumerChangeView,
    ConsumerDeadLetterPageView,
    ConsumerLagsView,
    ReplayView,
)
from outbox.entrypoints.wire.workers import WorkersView

ConsumerCode = Annotated[str, Parameter(description="The consumer's code (module.name).")]
_READ = ("unauthenticated", "staff-required", "step-up-required", "service-unavailable")
_WRITE = ("validation-error", *_READ)
Reason = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_REASON)]


class ConsumerChangeRequest(Body, frozen=True):
    """Why the consumer is paused or resumed (kept in the audit; never personal data)."""

    reason: Reason


class ReplayRequest(Body, frozen=True):
    """Deliver again from a publication sequence or a time (exactly one), and why."""

    reason: Reason
    from_sequence: Annotated[int, msgspec.Meta(ge=1)] | None = None
    since: datetime | None = None


class StaffConsumersController(Controller):
    """The platform staff's controls over the consumers of tenant events."""

    path = "/platform-admin/consumers"
    tags = ["staff"]  # noqa: RUF012 - Litestar reads a class attribute
    security = SECURITY

    @get("/", summary="Every consumer: state, lag, dead letters", responses=staff_responses(*_READ))
    async def consumers(
        self, operator: Operator, principal: Caller, elevation_token: ElevationToken = None
    ) -> ConsumerLagsView:
        """By code."""
        actor = await staff_actor(operator, principal, elevation_token)
        return ConsumerLagsView.of(await operator.consumers.lag(actor=actor))

    @get(
        "/{consumer:str}/dead-letters",
        summary="A consumer's dead-lettered deliveries, newest first",
        responses=staff_responses(*_WRITE),
    )
    async def dead_letters(
        self,
        operator: Operator,
        principal: Caller,
        consumer: ConsumerCode,
        *,
        before: Annotated[int | None, Parameter(ge=1, description="A sequence (cursor).")] = None,
        limit: Annotated[int, Parameter(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
        elevation_token: ElevationToken = None,
    ) -> ConsumerDeadLetterPageView:
        """One page; pass pageInfo.endCursor as before for the next."""
        actor = await staff_actor(operator, principal, elevation_token)
        items = await operator.consumers.dead_letters(
            consumer, before=before, limit=limit, actor=actor
        )
        return ConsumerDeadLetterPageView.of(items, limit=limit)

    @post(
        "/{consumer:str}/replays",
        status_code=HTTP_200_OK,
        summary="Deliver again, in a new round, what was published from a point on (audited)",
        responses=staff_responses(*_WRITE),
    )
    async def replay(
        self,
        operator: Operator,
        principal: Caller,
        consumer: ConsumerCode,
        data: JSONBody[ReplayRequest],
        elevation_token: ElevationToken = None,
    ) -> ReplayView:
        """The deliveries written."""
        actor = await staff_actor(operator, principal, elevation_token)
        written = await operator.consumers.replay(
            ConsumerReplay(
                consumer=consumer,
                actor=actor,
                from_sequence=data.from_sequence,
                since=data.since,
                reason=data.reason,
            )
        )
        return ReplayView(consumer=consumer, deliveries=written)

    @post(
        "/{consumer:str}/pause",
        status_code=HTTP_200_OK,
        summary="Pause a consumer: it claims nothing; deliveries keep arriving (audited)",
        responses=staff_responses(*_WRITE),
    )
    async def pause(
        self,
        operator: Operator,
        principal: Caller,
        consumer: ConsumerCode,
        data: JSONBody[ConsumerChangeRequest],
        elevation_token: ElevationToken = None,
    ) -> ConsumerChangeView:
        """``changed`` is false when it was paused already."""
        return await _set_active(operator, principal, elevation_token, consumer, data, active=False)

    @post(
        "/{consumer:str}/resume",
        status_code=HTTP_200_OK,
        summary="Resume a paused consumer from where its deliveries wait (audited)",
        responses=staff_responses(*_WRITE),
    )
    async def resume(
        self,
        operator: Operator,
        principal: Caller,
        consumer: ConsumerCode,
        data: JSONBody[ConsumerChangeRequest],
        elevation_token: ElevationToken = None,
    ) -> ConsumerChangeView:
        """``changed`` is false when it was running already."""
        return await _set_active(operator, principal, elevation_token, consumer, data, active=True)


async def _set_active(  # noqa: PLR0917 - a route's parts
    operator: Operator,
    principal: Caller,
    token: str | None,
    consumer: str,
    data: ConsumerChangeRequest,
    active: bool,
) -> ConsumerChangeView:
    actor = await staff_actor(operator, principal, token)
    changed = await operator.consumers.set_active(
        consumer, active=active, actor=actor, reason=data.reason
    )
    return ConsumerChangeView(consumer=consumer, active=active, changed=changed)


class StaffWorkersController(Controller):
    """Which worker processes run which lanes, since when, with what lag."""

    path = "/platform-admin/workers"
    tags = ["staff"]  # noqa: RUF012 - Litestar reads a class attribute
    security = SECURITY

    @get(
        "/",
        summary="Every lane of every worker process seen in the last day, running ones first",
        responses=staff_responses(*_READ),
    )
    async def workers(
        self,
        operator: Operator,
        principal: Caller,
        elevation_token: ElevationToken = None,
    ) -> WorkersView:
        """Running lanes first; lag is how long each lane's oldest due work has waited."""
        actor = await staff_actor(operator, principal, elevation_token)
        return WorkersView.of(await operator.workers.workers(actor=actor))
