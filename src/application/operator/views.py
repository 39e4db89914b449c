"""What the operator's own use cases answer: a change of staff membership."""

from __future__ import annotations

from uuid import UUID

import attrs


@attrs.frozen(kw_only=True)
class StaffChange:
    """The identity a staff grant or revocation named, and whether anything changed."""

    identity_id: UUID
    changed: bool
