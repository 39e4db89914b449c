"""Revoke every session of the caller's account (DELETE /sessions), and tell its owner."""

from __future__ import annotations

import attrs

from application.identity.ports import IdentityTransactions
from application.identity.principal import Principal
from application.identity.security_notices import SecurityNotices
from application.ports import Clock, Ids, Telemetry
from domain.identity.account_events import sessions_revoked
from domain.identity.security_changes import SecurityChange


@attrs.frozen(kw_only=True)
class RevokeSessions:
    """Ends every active session of the identity, the caller's too, with a security notice.

    No step-up is needed: ending sessions only ever takes access away, and an owner who
    fears a stolen token must be able to do it at once.
    """

    transactions: IdentityTransactions
    notices: SecurityNotices
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
            await self.notices.send(
                uow,
                identity_id=principal.identity_id,
                change=SecurityChange.SESSIONS_REVOKED,
                now=now,
            )
            await uow.commit()
        self.telemetry.event(
            "identity.session.all_revoked",
            identity_id=str(principal.identity_id),
            sessions_revoked=revoked,
        )
        return revoked
