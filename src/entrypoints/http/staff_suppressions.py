"""Staff routes over receipts and suppressions, on the admin listener.

As every staff route: a bearer session of an active staff member and a fresh step-up
(Elevation-Token), both checked by the database with every call. Destinations travel in
request bodies, never in URLs (which proxies log), and come back masked.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated
from uuid import UUID

import msgspec
from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.exceptions import NotFoundException
from litestar.params import JSONBody, Parameter, QueryParameter
from litestar.status_codes import HTTP_200_OK

from outbox.application.delivery.operations import SUPPRESSIONS_MAX as MAX_LIMIT
from outbox.application.delivery.operations import (
    MessageReceipts,
    ReceiptsQuery,
    SuppressionAction,
    SuppressionCommand,
    SuppressionQuery,
)
from outbox.application.delivery.views import SuppressionChange, SuppressionView
from outbox.application.operator.require_elevation import ElevationCheck
from outbox.application.operator.services import OperatorServices
from outbox.application.staff import DEFAULT_LIMIT
from outbox.domain.channels import Channel
from outbox.entrypoints.http.caller import SECURITY, Caller, ElevationToken
from outbox.entrypoints.http.schemas import Body
from outbox.entrypoints.http.staff_problems import staff_responses
from outbox.entrypoints.wire import Out

Operator = NamedDependency[OperatorServices]
Destination = Annotated[
    str, msgspec.Meta(min_length=3, max_length=320, description="E-mail address or E.164 number.")
]
Reason = Annotated[
    str, msgspec.Meta(min_length=1, max_length=500, description="Why; kept in the audit.")
]
_READ = ("unauthenticated", "staff-required", "step-up-required", "service-unavailable")
_WRITE = ("validation-error", *_READ)


class ReceiptOut(Out, frozen=True):
    """One receipt a provider sent back (its raw body stays in the database)."""

    id: int
    provider: str
    event: str
    detail: str
    occurred_at: datetime
    received_at: datetime


class MessageReceiptsOut(Out, frozen=True):
    """A message's delivery state and its receipts, oldest first."""

    message_id: UUID
    delivery_state: str
    receipts: list[ReceiptOut]

    @classmethod
    def of(cls, found: MessageReceipts) -> MessageReceiptsOut:
        """The body for ``found``."""
        return cls(
            message_id=found.message_id,
            delivery_state=found.delivery_state.value,
            receipts=[
                ReceiptOut(
                    id=r.id,
                    provider=r.provider,
                    event=r.event,
                    detail=r.detail,
                    occurred_at=r.occurred_at,
                    received_at=r.received_at,
                )
                for r in found.receipts
            ],
        )


class SuppressionOut(Out, frozen=True):
    """One suppression; the destination masked."""

    id: UUID
    destination: str
    channel: str
    cause: str
    reason: str
    created_at: datetime
    lifted_at: datetime | None

    @classmethod
    def of(cls, item: SuppressionView) -> SuppressionOut:
        """The body for ``item``."""
        return cls.built(item)


class SuppressionsOut(Out, frozen=True):
    """Suppressions, newest first: ``{"items": [...]}`` like every list the staff routes and
    ``outboxctl … --json`` answer."""

    items: list[SuppressionOut]

    @classmethod
    def of(cls, items: Sequence[SuppressionView]) -> SuppressionsOut:
        """The body for ``items``."""
        return cls(items=[SuppressionOut.of(item) for item in items])


class SuppressionChangeOut(Out, frozen=True):
    """What an add or a lift did; ``changed`` is false for an address already suppressed."""

    id: UUID
    destination: str
    changed: bool

    @classmethod
    def of(cls, change: SuppressionChange) -> SuppressionChangeOut:
        """The body for ``change``."""
        return cls.built(change)


class SuppressionRequest(Body, frozen=True):
    """Suppress (or lift the suppression of) a destination, saying why."""

    destination: Destination
    reason: Reason
    channel: Channel | None = None


class StaffSuppressionsController(Controller):
    """The platform staff's view of receipts and suppressed destinations."""

    path = "/platform-admin"
    tags = ["staff"]  # noqa: RUF012 - Litestar reads a class attribute
    security = SECURITY

    @get(
        "/security-outbox/messages/{message_id:uuid}/receipts",
        summary="A message's delivery state and the receipts its provider sent back",
        responses=staff_responses(*_READ, "not-found"),
    )
    async def receipts(
        self,
        operator: Operator,
        principal: Caller,
        message_id: Annotated[UUID, Parameter(description="The message's id.")],
        elevation_token: ElevationToken = None,
    ) -> MessageReceiptsOut:
        """The receipts (none: accepted, or never sent)."""
        actor = await operator.require_elevation(
            ElevationCheck(principal=principal, elevation_token=elevation_token)
        )
        found = await operator.messages.show_receipts(
            ReceiptsQuery(message_id=message_id, actor=actor)
        )
        return MessageReceiptsOut.of(found)

    @get(
        "/suppressions",
        summary="Suppressed destinations, newest first, masked",
        responses=staff_responses("validation-error", *_READ),
    )
    async def suppressions(
        self,
        operator: Operator,
        principal: Caller,
        *,
        include_lifted: Annotated[
            bool, QueryParameter(name="includeLifted", description="Lifted ones too.")
        ] = False,
        limit: Annotated[int, Parameter(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
        elevation_token: ElevationToken = None,
    ) -> SuppressionsOut:
        """The suppressions."""
        actor = await operator.require_elevation(
            ElevationCheck(principal=principal, elevation_token=elevation_token)
        )
        items = await operator.messages.list_suppressions(
            SuppressionQuery(include_lifted=include_lifted, limit=limit, actor=actor)
        )
        return SuppressionsOut.of(items)

    @post(
        "/suppressions",
        status_code=HTTP_200_OK,
        summary="Suppress a destination for every purpose (audited)",
        responses=staff_responses(*_WRITE),
    )
    async def add(
        self,
        operator: Operator,
        principal: Caller,
        data: JSONBody[SuppressionRequest],
        elevation_token: ElevationToken = None,
    ) -> SuppressionChangeOut:
        """Later messages to it dead-letter ``suppressed`` without a provider call."""
        actor = await operator.require_elevation(
            ElevationCheck(principal=principal, elevation_token=elevation_token)
        )
        change = await operator.messages.change_suppression(
            SuppressionCommand(
                action=SuppressionAction.ADD,
                destination=data.destination,
                reason=data.reason,
                channel=data.channel,
                actor=actor,
            )
        )
        if change is None:  # an add always answers
            raise NotFoundException
        return SuppressionChangeOut.of(change)

    @post(
        "/suppressions/lifts",
        status_code=HTTP_200_OK,
        summary="Lift the suppression of a destination (audited)",
        responses=staff_responses(*_WRITE, "not-found"),
    )
    async def lift(
        self,
        operator: Operator,
        principal: Caller,
        data: JSONBody[SuppressionRequest],
        elevation_token: ElevationToken = None,
    ) -> SuppressionChangeOut:
        """The next message to it is sent; 404 when it was not suppressed."""
        actor = await operator.require_elevation(
            ElevationCheck(principal=principal, elevation_token=elevation_token)
        )
        change = await operator.messages.change_suppression(
            SuppressionCommand(
                action=SuppressionAction.LIFT,
                destination=data.destination,
                reason=data.reason,
                actor=actor,
            )
        )
        if change is None:
            raise NotFoundException(detail="this destination is not suppressed")
        return SuppressionChangeOut.of(change)
