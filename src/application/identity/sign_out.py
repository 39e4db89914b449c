"""Sign out: end the caller's own session (DELETE /sessions/current)."""

from __future__ import annotations

import attrs

from outbox.application.identity.ports import IdentityTransactions
from outbox.application.identity.principal import Principal
from outbox.application.ports import Clock, Telemetry


@attrs.frozen(kw_only=True)
class SignOut:
    """Revokes the session whose bearer token the caller presented; its elevations end with it."""

    transactions: IdentityTransactions
    clock: Clock
    telemetry: Telemetry

    async def __call__(self, principal: Principal) -> None:
        """Revoke the caller's session; raises StoreUnavailable."""
        async with self.transactions.begin() as uow:
            await uow.identity.revoke_session(session_id=principal.session_id, now=self.clock.now())
            await uow.commit()
        self.telemetry.event(
            "identity.session.signed_out",
            identity_id=str(principal.identity_id),
            session_id=str(principal.session_id),
        )
