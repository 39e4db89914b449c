"""The ports of the reference Identity module (typing.Protocol, async).

One unit of work gives the identity store, the outbox writer and the domain-event appender in
one database transaction, so a challenge, invitation or magic link and its message commit
together, and an account's change and its domain event too.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from datetime import date, datetime, timedelta
from typing import Protocol
from uuid import UUID

import attrs

from outbox.application.delivery.ports import OutboxWriter
from outbox.application.events.ports import DomainEventAppender
from outbox.domain.delivery.messages import Message
from outbox.domain.identity.challenges import Challenge
from outbox.domain.identity.code_budgets import Audience, CodeBudget
from outbox.domain.identity.identities import Account, Identity, LoginIdentifier
from outbox.domain.identity.invitations import Invitation, InvitationOutcome
from outbox.domain.identity.magic_links import MagicLink
from outbox.domain.identity.organizations import Membership, Organization
from outbox.domain.identity.rate_limits import Backoff, RateLimit
from outbox.domain.identity.sessions import Elevation, Session
from outbox.domain.purposes import Purpose


@attrs.frozen(kw_only=True)
class RecoveryTarget:
    """What the anti-enumeration lookup found: an identity (or None) and its open challenge."""

    identity_id: UUID | None
    challenge: Challenge | None = None


@attrs.frozen(kw_only=True)
class MagicLinkTarget:
    """What the anti-enumeration lookup found: an identity (or None) and its open link."""

    identity_id: UUID | None
    link: MagicLink | None = None


class IdentityStore(Protocol):
    """The identity tables, as one transaction sees them (role ``identity_service``).

    ``find_*`` methods that return a row the caller will change lock it until the
    transaction ends. Every method raises StoreUnavailable for a transient database
    error; ``save_login_identifier`` raises IdentifierTaken when another identity
    holds the identifier verified.
    """

    async def find_account(self, identifier: str) -> Account | None:
        """The login identifier (verified or not) with its identity and password hash."""
        ...

    async def find_verified_identifiers(self, identity_id: UUID) -> Sequence[LoginIdentifier]:
        """The identity's verified identifiers, emails first, oldest first."""
        ...

    async def add_identity(self, identity: Identity) -> None:
        """Insert a new identity."""
        ...

    async def save_login_identifier(self, login: LoginIdentifier) -> None:
        """Insert or update the identifier; an unverified one of another identity is taken over."""
        ...

    async def save_password(self, *, identity_id: UUID, password_hash: str, now: datetime) -> None:
        """Set the identity's password hash."""
        ...

    async def find_challenge(
        self, *, purpose: Purpose, identity_id: UUID | None, identifier: str | None
    ) -> Challenge | None:
        """The newest open-state challenge of ``purpose`` matching the given keys, locked."""
        ...

    async def save_challenge(self, challenge: Challenge) -> None:
        """Insert or update the challenge."""
        ...

    async def add_session(self, session: Session) -> None:
        """Insert a session."""
        ...

    async def find_session(self, token_digest: str) -> Session | None:
        """The session with this token digest, active or not."""
        ...

    async def revoke_sessions(self, *, identity_id: UUID, now: datetime) -> int:
        """Revoke every active session of the identity; return how many."""
        ...

    async def revoke_session(self, *, session_id: UUID, now: datetime) -> int:
        """Revoke one session if it is active; return 1, or 0 if it had already ended."""
        ...

    async def hold_code_budget(
        self, *, identity_id: UUID, audience: Audience, day: date
    ) -> CodeBudget:
        """The day's wrong-code budget of the account and audience (a fresh one if none),
        locked until the transaction ends."""
        ...

    async def save_code_budget(self, budget: CodeBudget) -> None:
        """Insert or update the budget."""
        ...

    async def add_elevation(self, elevation: Elevation, *, challenge_id: UUID) -> None:
        """Insert an elevation (a fresh step-up): the result of consuming ``challenge_id``, a
        step-up challenge of the session's identity, in this unit of work (once per challenge).
        """
        ...

    async def find_elevation(self, token_digest: str) -> Elevation | None:
        """The elevation with this token digest, active or not."""
        ...

    async def add_organization(self, organization: Organization, founder: Membership) -> None:
        """Insert an organization and its founder's membership."""
        ...

    async def find_organization(self, organization_id: UUID) -> Organization | None:
        """The organization, if it exists."""
        ...

    async def find_membership(
        self, *, organization_id: UUID, identity_id: UUID
    ) -> Membership | None:
        """The identity's membership of the organization, if any."""
        ...

    async def save_membership(self, membership: Membership) -> None:
        """Insert the membership, or replace its permissions."""
        ...

    async def find_invitation(self, invitation_id: UUID) -> Invitation | None:
        """The invitation, locked."""
        ...

    async def find_invitation_by_token(self, token_digest: str) -> Invitation | None:
        """The invitation whose token has this digest, locked."""
        ...

    async def save_invitation(self, invitation: Invitation) -> None:
        """Insert or update the invitation."""
        ...

    async def enqueue_invitation(
        self,
        *,
        invitation: Invitation,
        message: Message,
        pending_max: int,
        per_organization: RateLimit,
        per_address: RateLimit,
    ) -> InvitationOutcome:
        """Issue ``invitation`` and enqueue ``message``, or refuse and write nothing.

        Under the organization's lock: the inviter must hold organization.account.manage;
        sends per organization and per (organization, address) in their sliding windows and
        the pending invitations (the same address's excepted) must stay under their limits.
        A pending invitation of the same address is revoked first, its unsent message
        withdrawn.
        """
        ...

    async def find_magic_link_by_token(self, token_digest: str) -> MagicLink | None:
        """The magic link whose token has this digest, locked."""
        ...

    async def save_magic_link(self, link: MagicLink) -> None:
        """Insert or update the magic link."""
        ...

    async def find_recovery_target(self, identifier: str) -> RecoveryTarget:
        """Anti-enumeration lookup: the verified identifier's identity and open recovery challenge.

        One statement whatever the answer, so a known identifier cannot be told by its cost.
        """
        ...

    async def open_recovery_if_known(
        self, *, identity_id: UUID | None, challenge: Challenge, message: Message
    ) -> None:
        """Save the challenge and enqueue its message if ``identity_id`` is set; else nothing.

        One statement whatever the answer, so a known identifier cannot be told by its cost.
        """
        ...

    async def find_magic_link_target(self, email: str) -> MagicLinkTarget:
        """Anti-enumeration lookup: the verified email's identity and its open magic link."""
        ...

    async def open_magic_link_if_known(
        self, *, identity_id: UUID | None, link: MagicLink, message: Message
    ) -> None:
        """Save the link and enqueue its message if ``identity_id`` is set; else nothing."""
        ...


class IdentityUnitOfWork(Protocol):
    """One database transaction: the identity store, the outbox writer and the event appender
    share it.

    Leaving the ``begin()`` block without ``commit()`` rolls everything back.
    """

    @property
    def identity(self) -> IdentityStore:
        """The identity tables in this transaction."""
        ...

    @property
    def outbox(self) -> OutboxWriter:
        """The outbox producer API in this transaction."""
        ...

    @property
    def events(self) -> DomainEventAppender:
        """The domain-event producer API in this transaction (module ``identity``)."""
        ...

    async def commit(self) -> None:
        """Commit; raises StoreUnavailable for a transient failure (nothing was committed)."""
        ...


class IdentityTransactions(Protocol):
    """Opens units of work."""

    def begin(self) -> AbstractAsyncContextManager[IdentityUnitOfWork]:
        """Begin a transaction; raises StoreUnavailable if the database cannot be reached."""
        ...


class RateLimiter(Protocol):
    """Counts hits per key in fixed windows, and paces sends per key; each call in its own
    short transaction."""

    async def hit(self, *, key: str, window_start: datetime, window_end: datetime) -> int:
        """Count one hit on ``key`` in the window starting at ``window_start``; return the total.

        ``key`` is a digest, never a raw address. Raises StoreUnavailable.
        """
        ...

    async def pace(self, *, key: str, now: datetime, backoff: Backoff) -> timedelta | None:
        """Count one send on ``key`` if ``backoff`` allows one at ``now``: None when counted,
        else how long until the next send is allowed (nothing is counted then).

        ``key`` is a digest, never a raw address. Raises StoreUnavailable.
        """
        ...

    async def pace_wait(self, *, key: str, now: datetime) -> timedelta | None:
        """How long until ``key``'s pace allows its next send; None when it allows one at
        ``now``. Counts nothing. Raises StoreUnavailable."""
        ...
