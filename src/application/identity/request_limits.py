"""Rate limits on the identity routes: per client address, a pace per
destination, an hourly SMS budget per country prefix, organizations per account."""

from __future__ import annotations

from datetime import datetime, timedelta
from uuid import UUID

import attrs

from outbox.application.errors import InvalidField
from outbox.application.identity.errors import RateLimited
from outbox.application.identity.phone_numbers import country_of
from outbox.application.identity.ports import RateLimiter
from outbox.domain.channels import Channel
from outbox.domain.identity.identifiers import Identifier
from outbox.domain.identity.rate_limits import Backoff, RateLimit, client_block, inbox_of
from outbox.domain.identity.tokens import token_digest

HOURLY = Backoff(
    first_wait=timedelta(hours=1), max_wait=timedelta(hours=1), quiet=timedelta(hours=1)
)


@attrs.frozen(kw_only=True)
class RateLimitPolicy:
    """The limits in force; the defaults are documented in the README.

    ``sms_countries`` None texts every country (development); an empty set texts none.
    """

    per_client: RateLimit = attrs.field(
        factory=lambda: RateLimit(limit=20, window=timedelta(minutes=1))
    )
    per_destination: Backoff = attrs.field(factory=Backoff)
    # After the n-th failed sign-in of a streak, the identifier's next one waits 2**(n-1)
    # seconds, at most a minute: a typo costs a second, a guesser gets about one try a minute.
    sign_in_failures: Backoff = attrs.field(
        factory=lambda: Backoff(
            first_wait=timedelta(seconds=1),
            max_wait=timedelta(minutes=1),
            quiet=timedelta(minutes=15),
        )
    )
    sms_countries: frozenset[str] | None = None
    sms_per_country_prefix: RateLimit = attrs.field(
        factory=lambda: RateLimit(limit=100, window=timedelta(hours=1))
    )
    organizations_per_account: RateLimit = attrs.field(
        factory=lambda: RateLimit(limit=10, window=timedelta(days=1))
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
        """Enforce the per-client limit of ``route`` (an IPv6 client is its /64); raises
        RateLimited."""
        await self.enforce(self.policy.per_client, f"client|{route}|{client_block(address)}", now)

    async def destination(self, identifier: Identifier, now: datetime) -> timedelta | None:
        """Count one send to ``identifier``; None if it may go now, else the wait.

        The pace is shared by every route, so one mailbox or phone gets a few codes per
        window however it is asked for, and by every spelling that reaches one inbox
        (``inbox_of``: plus-tags, Gmail's dots). An SMS also spends its country prefix's hourly
        budget, and goes only to the configured countries: raises InvalidField (the
        ``identifier`` field) for a number of another country.
        """
        sms = identifier.channel is Channel.SMS
        country = country_of(identifier.value) if sms else None
        allowed = self.policy.sms_countries
        if country is not None and allowed is not None and country.region not in allowed:
            raise InvalidField("identifier", "text messages are not sent to this country")
        inbox = identifier.value if sms else inbox_of(identifier.value)
        wait = await self.pace(f"destination|{inbox}", now)
        if wait is not None or country is None:
            return wait
        return await self.retry_after(
            self.policy.sms_per_country_prefix, f"sms|{country.prefix}", now
        )

    async def sign_in_wait(self, identifier: Identifier, now: datetime) -> timedelta | None:
        """How long until ``identifier`` may be signed in to again (None: now); counts nothing.

        The pace is the identifier's, whether an account has it or not, so it tells nobody
        which exist."""
        return await self.limiter.pace_wait(
            key=token_digest(f"sign_in|{identifier.value}"), now=now
        )

    async def sign_in_failed(self, identifier: Identifier, now: datetime) -> None:
        """Count a failed sign-in of ``identifier``: its next one waits longer."""
        await self.limiter.pace(
            key=token_digest(f"sign_in|{identifier.value}"),
            now=now,
            backoff=self.policy.sign_in_failures,
        )

    async def sign_in_notice_due(self, identifier: Identifier, now: datetime) -> bool:
        """Whether the owner of ``identifier`` may be told of failed sign-ins now (at most once
        an hour); counted for unknown identifiers alike."""
        wait = await self.limiter.pace(
            key=token_digest(f"sign_in_notice|{identifier.value}"), now=now, backoff=HOURLY
        )
        return wait is None

    async def account(self, identity_id: UUID, now: datetime) -> timedelta | None:
        """Count one code sent to the account's own identifiers (step-up); None or the wait."""
        return await self.pace(f"account|{identity_id}", now)

    async def pace(self, key: str, now: datetime) -> timedelta | None:
        """Count one send on ``key`` if its backoff allows one now; else the wait."""
        return await self.limiter.pace(
            key=token_digest(key), now=now, backoff=self.policy.per_destination
        )

    async def organization_creation(self, identity_id: UUID, now: datetime) -> None:
        """Enforce the organizations-per-account limit; raises RateLimited."""
        await self.enforce(
            self.policy.organizations_per_account, f"organizations|{identity_id}", now
        )
