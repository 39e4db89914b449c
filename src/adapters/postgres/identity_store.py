"""IdentityStore over the identity schema's SQL functions, on the caller's connection."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from typing import Any
from uuid import UUID

from psycopg import AsyncConnection

from outbox.adapters.postgres.identity_errors import identity_errors
from outbox.adapters.postgres.identity_rows import (
    Row,
    challenge_from,
    challenge_params,
    invitation_from,
    link_from,
    link_params,
    membership_from,
    message_params,
)
from outbox.application.identity.ports import MagicLinkTarget, RecoveryTarget
from outbox.domain.channels import Channel
from outbox.domain.delivery.messages import Message
from outbox.domain.identity.challenges import Challenge
from outbox.domain.identity.code_budgets import Audience, CodeBudget
from outbox.domain.identity.identities import Account, Identity, LoginIdentifier
from outbox.domain.identity.invitations import Invitation, InvitationOutcome, InvitationRefusal
from outbox.domain.identity.magic_links import MagicLink
from outbox.domain.identity.organizations import Membership, Organization
from outbox.domain.identity.rate_limits import RateLimit
from outbox.domain.identity.sessions import Elevation, Session
from outbox.domain.purposes import Purpose

CHALLENGE_COLUMNS = (
    "id, purpose, identity_id, identifier, channel, code_hash, failed_attempts, state,"
    " created_at, expires_at, ended_at"
)
INVITATION_COLUMNS = (
    "id, organization_id, email, token_digest, invited_by, state, created_at, expires_at,"
    " ended_at, accepted_by"
)
LINK_COLUMNS = "id, identity_id, email, token_digest, created_at, expires_at, redeemed_at"

FIND_ACCOUNT = (
    "SELECT identity_id, value, channel, created_at, verified_at, password_hash"
    " FROM identity.find_account(%s)"
)
FIND_VERIFIED = (
    "SELECT value, channel, created_at, verified_at FROM identity.find_verified_identifiers(%s)"
)
ADD_IDENTITY = "SELECT identity.add_identity(%s, %s)"
SAVE_LOGIN = "SELECT identity.save_login_identifier(%s, %s, %s, %s, %s)"
SAVE_PASSWORD = "SELECT identity.save_password(%s, %s, %s)"  # noqa: S105 - SQL, not a secret
FIND_CHALLENGE = (
    f"SELECT {CHALLENGE_COLUMNS} FROM identity.find_challenge(%s::text, %s::uuid, %s::text)"
)
SAVE_CHALLENGE = "SELECT identity.save_challenge(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
ADD_SESSION = "SELECT identity.add_session(%s, %s, %s, %s, %s)"
ADD_STAFF_SESSION = "SELECT identity.add_staff_session(%s, %s, %s, %s, %s)"
FIND_SESSION = (
    "SELECT id, identity_id, token_digest, created_at, expires_at, revoked_at"
    " FROM identity.find_session(%s)"
)
REVOKE_SESSIONS = "SELECT identity.revoke_sessions(%s, %s)"
REVOKE_SESSION = "SELECT identity.revoke_session(%s, %s)"
HOLD_CODE_BUDGET = "SELECT wrong_codes, exhausted_at FROM identity.hold_code_budget(%s, %s, %s)"
SAVE_CODE_BUDGET = "SELECT identity.save_code_budget(%s, %s, %s, %s, %s)"
ELEVATE_SESSION = "SELECT identity.elevate_session(%s, %s, %s, %s, %s, %s, %s)"
ELEVATE_STAFF_SESSION = "SELECT identity.elevate_staff_session(%s, %s, %s, %s, %s, %s, %s)"
FIND_ELEVATION = (
    "SELECT id, session_id, identity_id, token_digest, created_at, expires_at"
    " FROM identity.find_elevation(%s)"
)
ADD_ORGANIZATION = "SELECT identity.add_organization(%s, %s, %s, %s, %s)"
FIND_ORGANIZATION = "SELECT id, name, created_by, created_at FROM identity.find_organization(%s)"
FIND_MEMBERSHIP = (
    "SELECT organization_id, identity_id, permissions, created_at"
    " FROM identity.find_membership(%s, %s)"
)
SAVE_MEMBERSHIP = "SELECT identity.save_membership(%s, %s, %s, %s)"
FIND_INVITATION = f"SELECT {INVITATION_COLUMNS} FROM identity.find_invitation(%s)"
FIND_INVITATION_BY_TOKEN = f"SELECT {INVITATION_COLUMNS} FROM identity.find_invitation_by_token(%s)"
SAVE_INVITATION = "SELECT identity.save_invitation(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
ENQUEUE_INVITATION = (
    "SELECT refusal, retry_after, withdrawn_id FROM identity.enqueue_invitation_message("
    "%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s)"
)
FIND_LINK_BY_TOKEN = f"SELECT {LINK_COLUMNS} FROM identity.find_magic_link_by_token(%s)"
SAVE_LINK = "SELECT identity.save_magic_link(%s, %s, %s, %s, %s, %s, %s)"
FIND_RECOVERY_TARGET = (
    "SELECT target_identity_id, challenge_id, 'password_recovery', challenge_identity_id,"
    " challenge_identifier, challenge_channel, challenge_code_hash, challenge_failed_attempts,"
    " challenge_state, challenge_created_at, challenge_expires_at, challenge_ended_at"
    " FROM identity.find_recovery_target(%s)"
)
OPEN_RECOVERY = (
    "SELECT identity.open_recovery_if_known("
    "%s::uuid, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s)"
)
FIND_LINK_TARGET = (
    "SELECT target_identity_id, link_id, target_identity_id, link_email, link_token_digest,"
    " link_created_at, link_expires_at, link_redeemed_at"
    " FROM identity.find_magic_link_target(%s)"
)
OPEN_LINK = (
    "SELECT identity.open_magic_link_if_known("
    "%s::uuid, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s)"
)


class PostgresIdentityStore:
    """IdentityStore bound to one connection; its calls join the transaction open there.

    Raises IdentifierTaken, Conflict, StoreUnavailable or PermissionDenied for the matching
    database errors. With ``staff`` (the admin listener, role ``staff_service``) the sessions
    it starts and elevates are staff sessions, the only ones the staff functions accept.
    """

    def __init__(self, conn: AsyncConnection, *, staff: bool = False) -> None:
        self._conn = conn
        self._add_session = ADD_STAFF_SESSION if staff else ADD_SESSION
        self._elevate = ELEVATE_STAFF_SESSION if staff else ELEVATE_SESSION

    async def _one(self, query: str, params: tuple[Any, ...]) -> Row | None:
        with identity_errors():
            cursor = await self._conn.execute(query, params)
            return await cursor.fetchone()

    async def _all(self, query: str, params: tuple[Any, ...]) -> list[Row]:
        with identity_errors():
            cursor = await self._conn.execute(query, params)
            return await cursor.fetchall()

    async def _run(self, query: str, params: tuple[Any, ...]) -> None:
        with identity_errors():
            await self._conn.execute(query, params)

    async def find_account(self, identifier: str) -> Account | None:
        """The login identifier (verified or not) with its identity and password hash."""
        row = await self._one(FIND_ACCOUNT, (identifier,))
        if row is None:
            return None
        login = LoginIdentifier(
            value=row[1],
            channel=Channel(row[2]),
            identity_id=row[0],
            created_at=row[3],
            verified_at=row[4],
        )
        return Account(identity_id=row[0], identifier=login, password_hash=row[5])

    async def find_verified_identifiers(self, identity_id: UUID) -> Sequence[LoginIdentifier]:
        """The identity's verified identifiers, emails first, oldest first."""
        rows = await self._all(FIND_VERIFIED, (identity_id,))
        return [
            LoginIdentifier(
                value=r[0],
                channel=Channel(r[1]),
                identity_id=identity_id,
                created_at=r[2],
                verified_at=r[3],
            )
            for r in rows
        ]

    async def add_identity(self, identity: Identity) -> None:
        """Insert a new identity."""
        await self._run(ADD_IDENTITY, (identity.id, identity.created_at))

    async def save_login_identifier(self, login: LoginIdentifier) -> None:
        """Insert or update the identifier; raises IdentifierTaken."""
        params = (
            login.value,
            login.channel.value,
            login.identity_id,
            login.created_at,
            login.verified_at,
        )
        await self._run(SAVE_LOGIN, params)

    async def save_password(self, *, identity_id: UUID, password_hash: str, now: datetime) -> None:
        """Set the identity's password hash."""
        await self._run(SAVE_PASSWORD, (identity_id, password_hash, now))

    async def find_challenge(
        self, *, purpose: Purpose, identity_id: UUID | None, identifier: str | None
    ) -> Challenge | None:
        """The newest open-state challenge of ``purpose`` matching the given keys, locked."""
        row = await self._one(FIND_CHALLENGE, (purpose.value, identity_id, identifier))
        return None if row is None else challenge_from(row)

    async def save_challenge(self, challenge: Challenge) -> None:
        """Insert or update the challenge."""
        await self._run(SAVE_CHALLENGE, challenge_params(challenge))

    async def add_session(self, session: Session) -> None:
        """Insert a session."""
        params = (
            session.id,
            session.identity_id,
            session.token_digest,
            session.created_at,
            session.expires_at,
        )
        await self._run(self._add_session, params)

    async def find_session(self, token_digest: str) -> Session | None:
        """The session with this token digest, active or not."""
        row = await self._one(FIND_SESSION, (token_digest,))
        if row is None:
            return None
        return Session(
            id=row[0],
            identity_id=row[1],
            token_digest=row[2],
            created_at=row[3],
            expires_at=row[4],
            revoked_at=row[5],
        )

    async def revoke_sessions(self, *, identity_id: UUID, now: datetime) -> int:
        """Revoke every active session of the identity; return how many."""
        row = await self._one(REVOKE_SESSIONS, (identity_id, now))
        return int(row[0]) if row is not None else 0

    async def revoke_session(self, *, session_id: UUID, now: datetime) -> int:
        """Revoke one session if it is active; return 1, or 0 if it had already ended."""
        row = await self._one(REVOKE_SESSION, (session_id, now))
        return int(row[0]) if row is not None else 0

    async def hold_code_budget(
        self, *, identity_id: UUID, audience: Audience, day: date
    ) -> CodeBudget:
        """The day's wrong-code budget (a fresh one if none), locked until the transaction ends."""
        row = await self._one(HOLD_CODE_BUDGET, (identity_id, audience.value, day))
        wrong_codes, exhausted_at = row if row is not None else (0, None)
        return CodeBudget(
            identity_id=identity_id,
            audience=audience,
            day=day,
            wrong_codes=wrong_codes,
            exhausted_at=exhausted_at,
        )

    async def save_code_budget(self, budget: CodeBudget) -> None:
        """Insert or update the budget."""
        params = (
            budget.identity_id,
            budget.audience.value,
            budget.day,
            budget.wrong_codes,
            budget.exhausted_at,
        )
        await self._run(SAVE_CODE_BUDGET, params)

    async def add_elevation(self, elevation: Elevation, *, challenge_id: UUID) -> None:
        """Insert the elevation that consuming the step-up ``challenge_id`` grants."""
        params = (
            elevation.id,
            elevation.session_id,
            elevation.identity_id,
            challenge_id,
            elevation.token_digest,
            elevation.created_at,
            elevation.expires_at,
        )
        await self._run(self._elevate, params)

    async def find_elevation(self, token_digest: str) -> Elevation | None:
        """The elevation with this token digest, active or not."""
        row = await self._one(FIND_ELEVATION, (token_digest,))
        if row is None:
            return None
        return Elevation(
            id=row[0],
            session_id=row[1],
            identity_id=row[2],
            token_digest=row[3],
            created_at=row[4],
            expires_at=row[5],
        )

    async def add_organization(self, organization: Organization, founder: Membership) -> None:
        """Insert an organization and its founder's membership."""
        params = (
            organization.id,
            organization.name,
            organization.created_by,
            organization.created_at,
            sorted(p.value for p in founder.permissions),
        )
        await self._run(ADD_ORGANIZATION, params)

    async def find_organization(self, organization_id: UUID) -> Organization | None:
        """The organization, if it exists."""
        row = await self._one(FIND_ORGANIZATION, (organization_id,))
        if row is None:
            return None
        return Organization(id=row[0], name=row[1], created_by=row[2], created_at=row[3])

    async def find_membership(
        self, *, organization_id: UUID, identity_id: UUID
    ) -> Membership | None:
        """The identity's membership of the organization, if any."""
        row = await self._one(FIND_MEMBERSHIP, (organization_id, identity_id))
        return None if row is None else membership_from(row)

    async def save_membership(self, membership: Membership) -> None:
        """Insert the membership, or replace its permissions."""
        params = (
            membership.organization_id,
            membership.identity_id,
            sorted(p.value for p in membership.permissions),
            membership.created_at,
        )
        await self._run(SAVE_MEMBERSHIP, params)

    async def find_invitation(self, invitation_id: UUID) -> Invitation | None:
        """The invitation, locked."""
        row = await self._one(FIND_INVITATION, (invitation_id,))
        return None if row is None else invitation_from(row)

    async def find_invitation_by_token(self, token_digest: str) -> Invitation | None:
        """The invitation whose token has this digest, locked."""
        row = await self._one(FIND_INVITATION_BY_TOKEN, (token_digest,))
        return None if row is None else invitation_from(row)

    async def save_invitation(self, invitation: Invitation) -> None:
        """Insert or update the invitation."""
        params = (
            invitation.id,
            invitation.organization_id,
            invitation.email,
            invitation.token_digest,
            invitation.invited_by,
            invitation.state.value,
            invitation.created_at,
            invitation.expires_at,
            invitation.ended_at,
            invitation.accepted_by,
        )
        await self._run(SAVE_INVITATION, params)

    async def enqueue_invitation(
        self,
        *,
        invitation: Invitation,
        message: Message,
        pending_max: int,
        per_organization: RateLimit,
        per_address: RateLimit,
    ) -> InvitationOutcome:
        """Issue the invitation and enqueue its message under the organization's lock, or
        refuse and write nothing (identity.enqueue_invitation_message)."""
        params = (
            invitation.invited_by,
            invitation.organization_id,
            invitation.id,
            invitation.email,
            invitation.token_digest,
            invitation.created_at,
            invitation.expires_at,
            pending_max,
            per_organization.limit,
            per_organization.window,
            per_address.limit,
            per_address.window,
            *message_params(message),
        )
        row = await self._one(ENQUEUE_INVITATION, params)
        if row is None:
            return InvitationOutcome()
        refusal = None if row[0] is None else InvitationRefusal(row[0])
        return InvitationOutcome(refusal=refusal, retry_after=row[1], withdrawn=row[2])

    async def find_magic_link_by_token(self, token_digest: str) -> MagicLink | None:
        """The magic link whose token has this digest, locked."""
        row = await self._one(FIND_LINK_BY_TOKEN, (token_digest,))
        return None if row is None else link_from(row)

    async def save_magic_link(self, link: MagicLink) -> None:
        """Insert or update the magic link."""
        await self._run(SAVE_LINK, link_params(link))

    async def find_recovery_target(self, identifier: str) -> RecoveryTarget:
        """Anti-enumeration lookup: one statement, one row, whatever it finds."""
        row = await self._one(FIND_RECOVERY_TARGET, (identifier,))
        if row is None:
            return RecoveryTarget(identity_id=None)
        challenge = challenge_from(row[1:]) if row[1] is not None else None
        return RecoveryTarget(identity_id=row[0], challenge=challenge)

    async def open_recovery_if_known(
        self, *, identity_id: UUID | None, challenge: Challenge, message: Message
    ) -> None:
        """Save the challenge and enqueue its message if ``identity_id`` is set; else nothing."""
        params = (
            identity_id,
            challenge.id,
            challenge.identifier,
            challenge.channel.value,
            challenge.code_hash,
            challenge.failed_attempts,
            challenge.created_at,
            challenge.expires_at,
            *message_params(message),
        )
        await self._run(OPEN_RECOVERY, params)

    async def find_magic_link_target(self, email: str) -> MagicLinkTarget:
        """Anti-enumeration lookup: one statement, one row, whatever it finds."""
        row = await self._one(FIND_LINK_TARGET, (email,))
        if row is None or row[0] is None:
            return MagicLinkTarget(identity_id=None)
        link = link_from(row[1:]) if row[1] is not None else None
        return MagicLinkTarget(identity_id=row[0], link=link)

    async def open_magic_link_if_known(
        self, *, identity_id: UUID | None, link: MagicLink, message: Message
    ) -> None:
        """Save the link and enqueue its message if ``identity_id`` is set; else nothing."""
        params = (
            identity_id,
            link.id,
            link.email,
            link.token_digest,
            link.created_at,
            link.expires_at,
            *message_params(message),
        )
        await self._run(OPEN_LINK, params)
