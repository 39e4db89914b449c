"""A staff action over HTTP needs a fresh step-up: an active elevation of the caller's session."""

from __future__ import annotations

from uuid import UUID

import attrs

from application.identity.ports import IdentityTransactions
from application.identity.principal import Principal
from application.operator.errors import StepUpRequired
from application.ports import Clock
from domain.identity.tokens import token_digest


@attrs.frozen(kw_only=True)
class ElevationCheck:
    """The signed-in caller and the elevation token it presented (None: none presented)."""

    principal: Principal
    elevation_token: str | None = attrs.field(repr=False)


@attrs.frozen(kw_only=True)
class RequireElevation:
    """Looks the elevation token up by its digest; it must belong to this very session."""

    transactions: IdentityTransactions
    clock: Clock

    async def __call__(self, check: ElevationCheck) -> UUID:
        """The elevated identity; raises StepUpRequired for a missing, unknown, expired or
        other session's token."""
        if not check.elevation_token:
            raise StepUpRequired
        async with self.transactions.begin() as uow:
            elevation = await uow.identity.find_elevation(token_digest(check.elevation_token))
        principal = check.principal
        if (
            elevation is None
            or elevation.session_id != principal.session_id
            or elevation.identity_id != principal.identity_id
            or not elevation.is_active(self.clock.now())
        ):
            raise StepUpRequired
        return principal.identity_id
