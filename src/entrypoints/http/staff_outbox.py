"""Staff routes over the security outbox: backlog, dead letters, reissue.

Every route needs a bearer session whose identity is an active staff member and a fresh
step-up of that session (Elevation-Token); the database checks both with every call (403
staff-required or step-up-required otherwise).
"""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from litestar import Controller, Response, get, post
from litestar.di import NamedDependency
from litestar.params import HeaderParameter, Parameter
from litestar.status_codes import HTTP_201_CREATED

from outbox.application.delivery.operations import (
    BacklogQuery,
    DeadLetterQuery,
)
from outbox.application.operator.reissue_dead_letter import ReissueCommand
from outbox.application.operator.require_elevation import ElevationCheck
from outbox.application.operator.services import OperatorServices
from outbox.application.staff import DEFAULT_LIMIT, MAX_LIMIT, StaffActor
from outbox.entrypoints.http.caller import SECURITY, Caller, ElevationToken
from outbox.entrypoints.http.staff_problems import staff_responses
from outbox.entrypoints.wire.messages import BacklogView, DeadLetterPageView, ReissueView

REPLAYED_HEADER = "Idempotent-Replayed"

Operator = NamedDependency[OperatorServices]
Cursor = Annotated[UUID | None, Parameter(description="A dead letter's id (a page cursor).")]
Limit = Annotated[
    int,
    Parameter(ge=1, le=MAX_LIMIT, description=f"Dead letters per page (1 to {MAX_LIMIT})."),
]
IdempotencyKey = Annotated[
    str,
    HeaderParameter(
        name="Idempotency-Key",
        min_length=1,
        max_length=255,
        description=(
            "Names this request: a retry with the same key answers the first result and"
            " enqueues nothing; the same key for another request is refused (422)."
        ),
    ),
]
MessageId = Annotated[UUID, Parameter(description="The dead letter's id.")]


async def staff_actor(operator: Operator, principal: Caller, token: str | None) -> StaffActor:
    """The staff member calling with ``token`` (Elevation-Token), as the database checks it."""
    return await operator.require_elevation(
        ElevationCheck(principal=principal, elevation_token=token)
    )


class StaffOutboxController(Controller):
    """The platform staff's view of the security outbox."""

    path = "/platform-admin/security-outbox"
    tags = ["staff"]  # noqa: RUF012 - Litestar reads a class attribute
    security = SECURITY

    @get(
        "/backlog",
        summary="Messages per state and the age of the oldest due pending message",
        responses=staff_responses(
            "unauthenticated", "staff-required", "step-up-required", "service-unavailable"
        ),
    )
    async def backlog(
        self, operator: Operator, principal: Caller, elevation_token: ElevationToken = None
    ) -> BacklogView:
        """The backlog, zero-filled."""
        actor = await operator.require_elevation(
            ElevationCheck(principal=principal, elevation_token=elevation_token)
        )
        return BacklogView.of(await operator.messages.show_backlog(BacklogQuery(actor=actor)))

    @get(
        "/dead-letters",
        summary="Dead letters, newest first, in keyset pages; destinations masked",
        description=(
            "Give at most one cursor: after (older rows) or before (newer rows). The cursor"
            " must name a dead letter."
        ),
        responses=staff_responses(
            "validation-error",
            "unauthenticated",
            "staff-required",
            "step-up-required",
            "service-unavailable",
        ),
    )
    async def dead_letters(
        self,
        operator: Operator,
        principal: Caller,
        *,
        after: Cursor = None,
        before: Cursor = None,
        limit: Limit = DEFAULT_LIMIT,
        elevation_token: ElevationToken = None,
    ) -> DeadLetterPageView:
        """One page."""
        actor = await operator.require_elevation(
            ElevationCheck(principal=principal, elevation_token=elevation_token)
        )
        page = await operator.messages.list_dead_letters(
            DeadLetterQuery(actor=actor, after=after, before=before, limit=limit)
        )
        return DeadLetterPageView.of(page)

    @post(
        "/dead-letters/{message_id:uuid}/reissues",
        status_code=HTTP_201_CREATED,
        summary="Reissue a dead-lettered one-time code: a new code for its open challenge",
        description=(
            "Needs an Idempotency-Key and a fresh step-up (Elevation-Token). In one"
            " transaction the challenge's code is replaced (the old one stops working), the"
            " new code is sealed and enqueued, and the action is audited. Refused (409"
            " reissue-refused, with a reason) for superseded, expired or consumed codes,"
            " expired, consumed or locked challenges, invitations, magic links and"
            " notifications, when a newer message goes to the same destination, and (reason"
            " no_provider) when no provider sends the message's channel: nothing changes then,"
            " and the old code still works. When the channel's provider is paused the code is"
            " reissued and waitsForProvider names the provider: the new code goes out once it"
            f" is resumed. A replay answers 201 with the first result and {REPLAYED_HEADER}:"
            " true."
        ),
        responses=staff_responses(
            "validation-error",
            "unauthenticated",
            "staff-required",
            "step-up-required",
            "not-found",
            "reissue-refused",
            "request-in-progress",
            "idempotency-key-reused",
            "service-unavailable",
        ),
    )
    async def reissue(
        self,
        message_id: MessageId,
        idempotency_key: IdempotencyKey,
        operator: Operator,
        principal: Caller,
        elevation_token: ElevationToken = None,
    ) -> Response[ReissueView]:
        """Reissue once per key."""
        actor = await operator.require_elevation(
            ElevationCheck(principal=principal, elevation_token=elevation_token)
        )
        receipt = await operator.reissue_dead_letter(
            ReissueCommand(actor=actor, message_id=message_id, idempotency_key=idempotency_key)
        )
        headers = {REPLAYED_HEADER: "true"} if receipt.replayed else {}
        return Response(ReissueView.of(receipt), status_code=HTTP_201_CREATED, headers=headers)
