"""A fresh step-up: an elevation token that belongs to the caller's very session."""

from __future__ import annotations

from datetime import datetime, timedelta

from outbox.application.identity.ports import IdentityStore
from outbox.application.identity.principal import Principal
from outbox.domain.identity.tokens import token_digest


async def is_elevated(
    store: IdentityStore,
    principal: Principal,
    elevation_token: str | None,
    now: datetime,
    *,
    reads_for: timedelta | None = None,
) -> bool:
    """Whether ``elevation_token`` names a live elevation of ``principal``'s session (or,
    with ``reads_for``, one made within that long, to read with)."""
    if not elevation_token:
        return False
    elevation = await store.find_elevation(token_digest(elevation_token))
    return elevation is not None and elevation.elevates(
        session_id=principal.session_id,
        identity_id=principal.identity_id,
        now=now,
        reads_for=reads_for,
    )
