"""The request body of the staff routes that repair a tenant event's dead letter (the views
they answer are the wire package's)."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from outbox.application.staff import MAX_REASON
from outbox.entrypoints.http.schemas import Body


class RepairRequest(Body, frozen=True):
    """Why the dead letter is repaired (kept in the audit: never personal data)."""

    reason: Annotated[str, Meta(min_length=1, max_length=MAX_REASON)]
