"""The request body of the staff routes that repair a tenant event's dead letter (the views
they answer are the wire package's)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated
from uuid import UUID

from msgspec import Meta

from outbox.application.events.operations import BULK_MAX
from outbox.application.events.views import BulkEventAction
from outbox.application.staff import MAX_REASON
from outbox.entrypoints.http.schemas import Body


class RepairRequest(Body, frozen=True):
    """Why the dead letter is repaired (kept in the audit: never personal data)."""

    reason: Annotated[str, Meta(min_length=1, max_length=MAX_REASON)]


class BulkRequest(Body, frozen=True):
    """A bulk action over a filter, as previewed: the preview's ``asOf`` bounds what it
    touches; ``limit`` caps how many it changes in this request."""

    action: BulkEventAction
    as_of: datetime
    reason: Annotated[str, Meta(min_length=1, max_length=MAX_REASON)]
    event_type: str | None = None
    organization_id: UUID | None = None
    aggregate_type: str | None = None
    aggregate_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    limit: Annotated[int, Meta(ge=1, le=BULK_MAX)] = BULK_MAX
