"""Invitations to join an organization: a single-use, expiring token sent by email."""

from __future__ import annotations

import enum
from datetime import datetime, timedelta
from uuid import UUID

import attrs

from outbox.domain.identity.errors import TokenNotUsable


class InvitationState(enum.StrEnum):
    """Where an invitation is; only a pending one can be accepted or revoked."""

    PENDING = "pending"
    ACCEPTED = "accepted"
    REVOKED = "revoked"


class InvitationRefusal(enum.StrEnum):
    """Why an invitation was not issued; nothing was written."""

    PERMISSION = "permission"
    ORGANIZATION_RATE = "organization_rate"
    ADDRESS_RATE = "address_rate"
    PENDING_LIMIT = "pending_limit"


@attrs.frozen(kw_only=True)
class InvitationOutcome:
    """What issuing an invitation did: refused (and for how long, for a rate), or issued,
    revoking the same address's pending invitation of the organization (``withdrawn``)."""

    refusal: InvitationRefusal | None = None
    retry_after: timedelta | None = None
    withdrawn: UUID | None = None


@attrs.frozen(kw_only=True)
class InvitationLimits:
    """How many invitations an organization may have pending, and how long one lasts.

    The send limits, per organization and per (organization, address), are sliding windows
    counted over the invitations themselves, under the organization's lock.
    """

    pending_per_organization: int = 100
    lifetime: timedelta = timedelta(days=7)


@attrs.frozen(kw_only=True)
class Invitation:
    """An invitation of ``email`` to an organization; the token is stored only as its digest."""

    id: UUID
    organization_id: UUID
    email: str = attrs.field(repr=False)
    token_digest: str = attrs.field(repr=False)
    invited_by: UUID
    state: InvitationState = InvitationState.PENDING
    created_at: datetime
    expires_at: datetime
    ended_at: datetime | None = None
    accepted_by: UUID | None = None

    @classmethod
    def issue(
        cls,
        *,
        id: UUID,  # noqa: A002 - the invitation's own id is its natural name
        organization_id: UUID,
        email: str,
        token_digest: str,
        invited_by: UUID,
        now: datetime,
        lifetime: timedelta,
    ) -> Invitation:
        """A pending invitation that expires one lifetime from ``now``."""
        return cls(
            id=id,
            organization_id=organization_id,
            email=email,
            token_digest=token_digest,
            invited_by=invited_by,
            created_at=now,
            expires_at=now + lifetime,
        )

    def is_pending(self, now: datetime) -> bool:
        """Whether the invitation can still be accepted at ``now``."""
        return self.state is InvitationState.PENDING and now < self.expires_at

    def accept(self, *, identity_id: UUID, now: datetime) -> Invitation:
        """The invitation used by ``identity_id``; a used, revoked or expired one raises."""
        if not self.is_pending(now):
            raise TokenNotUsable("the invitation is not pending")
        return attrs.evolve(
            self, state=InvitationState.ACCEPTED, ended_at=now, accepted_by=identity_id
        )

    def revoke(self, now: datetime) -> Invitation:
        """The invitation withdrawn; an accepted or already revoked one raises."""
        if self.state is not InvitationState.PENDING:
            raise TokenNotUsable(f"the invitation is {self.state}")
        return attrs.evolve(self, state=InvitationState.REVOKED, ended_at=now)
