"""The principal: who a bearer token says the caller is."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import attrs


@attrs.frozen(kw_only=True)
class Principal:
    """The signed-in caller."""

    identity_id: UUID
    session_id: UUID
    session_expires_at: datetime
