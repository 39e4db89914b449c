"""Authenticate a bearer token: the identity and session it names, if it is active."""

from __future__ import annotations

import attrs

from outbox.application.identity.errors import Unauthenticated
from outbox.application.identity.ports import IdentityTransactions
from outbox.application.identity.principal import Principal
from outbox.application.ports import Clock
from outbox.domain.identity.tokens import token_digest


@attrs.frozen(kw_only=True)
class AuthenticateBearer:
    """Looks a bearer token up by its digest."""

    transactions: IdentityTransactions
    clock: Clock

    async def __call__(self, token: str) -> Principal:
        """The caller; raises Unauthenticated for an unknown, expired or revoked token."""
        if not token:
            raise Unauthenticated
        async with self.transactions.begin() as uow:
            session = await uow.identity.find_session(token_digest(token))
        if session is None or not session.is_active(self.clock.now()):
            raise Unauthenticated
        return Principal(
            identity_id=session.identity_id,
            session_id=session.id,
            session_expires_at=session.expires_at,
        )
