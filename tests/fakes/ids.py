"""Sequential, readable identifiers for tests."""

from __future__ import annotations

from uuid import UUID

import attrs


@attrs.define
class SequentialIds:
    """Hands out 00000000-0000-7000-8000-000000000001, …2, …3 in order (valid UUIDv7 layout)."""

    issued: int = 0

    def new_id(self) -> UUID:
        """The next id."""
        self.issued += 1
        return UUID(f"00000000-0000-7000-8000-{self.issued:012x}")
