"""Sessions (bearer tokens from signing in) and elevations (short-lived, from a step-up)."""

from __future__ import annotations

from datetime import datetime, timedelta
from uuid import UUID

import attrs


@attrs.frozen(kw_only=True)
class Session:
    """A signed-in identity; the bearer token is stored only as its digest."""

    id: UUID
    identity_id: UUID
    token_digest: str = attrs.field(repr=False)
    created_at: datetime
    expires_at: datetime
    revoked_at: datetime | None = None

    @classmethod
    def start(
        cls,
        *,
        id: UUID,  # noqa: A002 - the session's own id is its natural name
        identity_id: UUID,
        token_digest: str,
        now: datetime,
        lifetime: timedelta,
    ) -> Session:
        """A session that lasts ``lifetime`` from ``now``."""
        return cls(
            id=id,
            identity_id=identity_id,
            token_digest=token_digest,
            created_at=now,
            expires_at=now + lifetime,
        )

    def is_active(self, now: datetime) -> bool:
        """Whether the token still authenticates at ``now``."""
        return self.revoked_at is None and now < self.expires_at


@attrs.frozen(kw_only=True)
class Elevation:
    """Proof of a fresh step-up for one session; its token is stored only as its digest."""

    id: UUID
    session_id: UUID
    identity_id: UUID
    token_digest: str = attrs.field(repr=False)
    created_at: datetime
    expires_at: datetime

    @classmethod
    def grant(
        cls,
        *,
        id: UUID,  # noqa: A002 - the elevation's own id is its natural name
        session_id: UUID,
        identity_id: UUID,
        session_expires_at: datetime,
        token_digest: str,
        now: datetime,
        lifetime: timedelta,
    ) -> Elevation:
        """An elevation of a session lasting ``lifetime``, and never past the session itself."""
        return cls(
            id=id,
            session_id=session_id,
            identity_id=identity_id,
            token_digest=token_digest,
            created_at=now,
            expires_at=min(now + lifetime, session_expires_at),
        )

    def is_active(self, now: datetime) -> bool:
        """Whether the elevation still holds at ``now``."""
        return now < self.expires_at

    def elevates(
        self,
        *,
        session_id: UUID,
        identity_id: UUID,
        now: datetime,
        reads_for: timedelta | None = None,
    ) -> bool:
        """Whether it is a live step-up of exactly this session of this identity at ``now``.

        ``reads_for`` (reading, not changing) also accepts a step-up made within that long
        before ``now``, expired or not: a stepped-up staff session reads for hours, while
        every command needs a fresh step-up.
        """
        if self.session_id != session_id or self.identity_id != identity_id:
            return False
        if reads_for is not None and now - self.created_at < reads_for:
            return True
        return self.is_active(now)
