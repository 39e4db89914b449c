"""Magic links: a single-use, expiring sign-in token sent by email."""

from __future__ import annotations

from datetime import datetime, timedelta
from uuid import UUID

import attrs

from outbox.domain.identity.errors import TokenNotUsable


@attrs.frozen(kw_only=True)
class MagicLink:
    """A sign-in link for one identity's email; the token is stored only as its digest."""

    id: UUID
    identity_id: UUID
    email: str = attrs.field(repr=False)
    token_digest: str = attrs.field(repr=False)
    created_at: datetime
    expires_at: datetime
    redeemed_at: datetime | None = None

    @classmethod
    def issue(
        cls,
        *,
        id: UUID,  # noqa: A002 - the link's own id is its natural name
        identity_id: UUID,
        email: str,
        token_digest: str,
        now: datetime,
        lifetime: timedelta,
    ) -> MagicLink:
        """A link that expires one lifetime from ``now``."""
        return cls(
            id=id,
            identity_id=identity_id,
            email=email,
            token_digest=token_digest,
            created_at=now,
            expires_at=now + lifetime,
        )

    def is_open(self, now: datetime) -> bool:
        """Whether the link can still be redeemed (or resent) at ``now``."""
        return self.redeemed_at is None and now < self.expires_at

    def resend(self, *, token_digest: str, now: datetime, lifetime: timedelta) -> MagicLink:
        """The same link with a new token and a fresh lifetime; the old token stops working."""
        if not self.is_open(now):
            raise TokenNotUsable("the link is used or expired")
        return attrs.evolve(self, token_digest=token_digest, expires_at=now + lifetime)

    def redeem(self, now: datetime) -> MagicLink:
        """The link used at ``now``; a used or expired one raises."""
        if not self.is_open(now):
            raise TokenNotUsable("the link is used or expired")
        return attrs.evolve(self, redeemed_at=now)
