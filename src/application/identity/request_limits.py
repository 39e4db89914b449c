"""Rate limits on the identity routes: per client address and per destination (SPEC §10)."""

from __future__ import annotations

from datetime import datetime, timedelta

import attrs

from application.identity.errors import RateLimited
from application.identity.ports import RateLimiter
from domain.identity.rate_limits import RateLimit
from domain.identity.tokens import token_digest


@attrs.frozen(kw_only=True)
class RateLimitPolicy:
    """The limits in force; the defaults are documented in the README."""

    per_client: RateLimit = attrs.field(
        factory=lambda: RateLimit(limit=20, window=timedelta(minutes=1))
    )
    per_destination: RateLimit = attrs.field(
        factory=lambda: RateLimit(limit=5, window=timedelta(minutes=15))
    )
    invitations_per_organization: RateLimit = attrs.field(
        factory=lambda: RateLimit(limit=100, window=timedelta(hours=1))
    )
    invitations_per_address: RateLimit = attrs.field(
        factory=lambda: RateLimit(limit=5, window=timedelta(days=1))
    )


@attrs.frozen(kw_only=True)
class RequestLimits:
    """Counts hits under digested keys (no address is stored) and says when a limit is hit."""

    limiter: RateLimiter
    policy: RateLimitPolicy = attrs.field(factory=RateLimitPolicy)

    async def retry_after(self, rule: RateLimit, key: str, now: datetime) -> timedelta | None:
        """Count one hit on ``key``; None if allowed, else how long until the next window."""
        start = rule.window_start(now)
        hits = await self.limiter.hit(
            key=token_digest(key), window_start=start, window_end=start + rule.window
        )
        return rule.retry_after(hits=hits, now=now)

    async def enforce(self, rule: RateLimit, key: str, now: datetime) -> None:
        """Count one hit on ``key``; raises RateLimited when the limit is passed."""
        wait = await self.retry_after(rule, key, now)
        if wait is not None:
            raise RateLimited(wait)

    async def client(self, route: str, address: str, now: datetime) -> None:
        """Enforce the per-client-address limit of ``route``; raises RateLimited."""
        await self.enforce(self.policy.per_client, f"client|{route}|{address}", now)

    async def destination(self, route: str, destination: str, now: datetime) -> timedelta | None:
        """Count one send to ``destination`` on ``route``; the wait if the limit is passed."""
        return await self.retry_after(
            self.policy.per_destination, f"destination|{route}|{destination}", now
        )
