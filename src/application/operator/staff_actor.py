"""Who acts as staff, and on whose word: their own elevation, or the database operator's."""

from __future__ import annotations

from uuid import UUID

import attrs


@attrs.frozen(kw_only=True)
class StaffActor:
    """The acting staff member and the proof the store hands the database with each call.

    ``elevation_digest`` is the SHA-256 (hex) of the elevation token of a fresh step-up that
    the staff member presented (the staff routes); the database itself checks that it names an
    unexpired elevation of this very member. None means the database operator acts in the
    member's name (``outboxctl ... --staff EMAIL``), which only a connection that may
    administer the database is allowed to do.
    """

    identity_id: UUID
    elevation_digest: str | None = attrs.field(default=None, repr=False)
