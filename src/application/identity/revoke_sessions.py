"""Revoke every session of the caller's account (DELETE /sessions); its
``identity.sessions_revoked`` event tells the owner (the identity.security_notices consumer)."""

from __future__ import annotations

import attrs

from outbox.application.identity.ports import IdentityTransactions
from outbox.application.identity.principal import Principal
from outbox.application.ports import Clock, Ids, Telemetry
from outbox.domain.identity.account_events import sessions_revoked


@attrs.frozen(kw_only=True)
class RevokeSessions:
    """Ends every active session of the identity, the caller's too, and appends its event.

    No step-up is needed: ending sessions only ever takes access away, and an owner who
    fears a stolen token must be able to do it at once.
    """

    transactions: IdentityTransactions
    ids: Ids
    clock: Clock
    telemetry: Telemetry

    async def __call__(self, principal: Principal) -> int:
        """Revoke them all; return how many were active. Raises StoreUnavailable."""
        now = self.clock.now()
        async with self.transactions.begin() as uow:
            revoked = await uow.identity.revoke_sessions(identity_id=principal.identity_id, now=now)
            await uow.events.append(
                sessions_revoked(
                    identity_id=principal.identity_id,
                    revocation_id=self.ids.new_id(),
                    session_id=principal.session_id,
                    count=revoked,
                    now=now,
                )
            )
            await uow.commit()
        self.telemetry.event(
            "identity.session.all_revoked",
            identity_id=str(principal.identity_id),
            sessions_revoked=revoked,
        )
        return revoked
