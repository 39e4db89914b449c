"""Time-ordered identifiers (UUIDv7, RFC 9562)."""

from __future__ import annotations

from uuid import UUID

from uuid_utils.compat import uuid7


class Uuid7Ids:
    """Hands out UUIDv7s: unique, and ordered by creation time for index locality."""

    def new_id(self) -> UUID:
        """A new UUIDv7."""
        return uuid7()
