"""Redeem a magic link: the single-use token becomes a session."""

from __future__ import annotations

import attrs

from outbox.application.identity.errors import InvalidToken
from outbox.application.identity.ports import IdentityTransactions
from outbox.application.identity.request_limits import RequestLimits
from outbox.application.identity.sign_in import SessionGrant, SessionStarter
from outbox.application.ports import Clock, Telemetry
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.identity.errors import TokenNotUsable
from outbox.domain.identity.tokens import token_digest

ROUTE = "magic_link_redemption"


@attrs.frozen(kw_only=True)
class RedeemMagicLinkCommand:
    """The token from the link."""

    token: str = attrs.field(repr=False)
    client_address: str = attrs.field(repr=False)


@attrs.frozen(kw_only=True)
class RedeemMagicLink:
    """Consumes the link, withdraws any unsent message for it, and starts a session."""

    transactions: IdentityTransactions
    sessions: SessionStarter
    limits: RequestLimits
    clock: Clock
    telemetry: Telemetry

    async def __call__(self, command: RedeemMagicLinkCommand) -> SessionGrant:
        """A session; raises InvalidToken or RateLimited."""
        now = self.clock.now()
        await self.limits.client(ROUTE, command.client_address, now)
        async with self.transactions.begin() as uow:
            link = await uow.identity.find_magic_link_by_token(token_digest(command.token))
            if link is None:
                raise InvalidToken
            try:
                redeemed = link.redeem(now)
            except TokenNotUsable:
                raise InvalidToken from None
            await uow.identity.save_magic_link(redeemed)
            await uow.outbox.cancel_by_subject(
                subject_id=link.id, reason=FailureClass.CHALLENGE_CONSUMED
            )
            grant = await self.sessions.start(uow, identity_id=link.identity_id, now=now)
            await uow.commit()
        self.telemetry.event(
            "identity.magic_link.redeemed", link_id=str(link.id), identity_id=str(link.identity_id)
        )
        return grant
