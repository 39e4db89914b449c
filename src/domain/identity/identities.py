"""People and the identifiers they sign in with."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import attrs

from outbox.domain.channels import Channel


@attrs.frozen(kw_only=True)
class Identity:
    """A person known to the service; it owns login identifiers, a password and sessions."""

    id: UUID
    created_at: datetime


@attrs.frozen(kw_only=True)
class LoginIdentifier:
    """An email address or phone number of one identity; only a verified one signs in."""

    value: str = attrs.field(repr=False)
    channel: Channel
    identity_id: UUID
    created_at: datetime
    verified_at: datetime | None = None

    @property
    def is_verified(self) -> bool:
        """Whether its owner proved control of it with a code."""
        return self.verified_at is not None

    def verify(self, now: datetime) -> LoginIdentifier:
        """The identifier marked verified at ``now`` (kept as it was if already verified)."""
        if self.verified_at is not None:
            return self
        return attrs.evolve(self, verified_at=now)


@attrs.frozen(kw_only=True)
class Account:
    """What sign-in needs to know about an identifier: its identity, state and password hash."""

    identity_id: UUID
    identifier: LoginIdentifier
    password_hash: str | None = attrs.field(repr=False)
