"""A staff action over HTTP needs a fresh step-up: an active elevation of the caller's session.

The database checks the elevation again with every staff call (the digest travels in the
StaffActor), so a connection that can call the staff functions still cannot act for a staff
member whose elevation token it does not hold.
"""

from __future__ import annotations

import attrs

from outbox.application.identity.elevations import is_elevated
from outbox.application.identity.ports import IdentityTransactions
from outbox.application.identity.principal import Principal
from outbox.application.ports import Clock
from outbox.application.staff import READ_WINDOW, StaffActor, StepUpRequired
from outbox.domain.identity.tokens import token_digest


@attrs.frozen(kw_only=True)
class ElevationCheck:
    """The signed-in caller and the elevation token it presented (None: none presented)."""

    principal: Principal
    elevation_token: str | None = attrs.field(repr=False)
    # Reading, not changing: a step-up made within READ_WINDOW serves, expired or not.
    reading: bool = False


@attrs.frozen(kw_only=True)
class RequireElevation:
    """Looks the elevation token up by its digest; it must belong to this very session."""

    transactions: IdentityTransactions
    clock: Clock

    async def __call__(self, check: ElevationCheck) -> StaffActor:
        """The elevated staff actor; raises StepUpRequired for a missing, unknown, expired or
        other session's token."""
        if not check.elevation_token:
            raise StepUpRequired
        async with self.transactions.begin() as uow:
            elevated = await is_elevated(
                uow.identity,
                check.principal,
                check.elevation_token,
                self.clock.now(),
                reads_for=READ_WINDOW if check.reading else None,
            )
        if not elevated:
            raise StepUpRequired
        return StaffActor(
            identity_id=check.principal.identity_id,
            elevation_digest=token_digest(check.elevation_token),
        )
