"""In-memory fakes of the identity ports: store, unit of work, rate limiter, secret source."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import date, datetime, timedelta
from uuid import UUID, uuid4

import attrs

from outbox.application.delivery.errors import DuplicateMessage
from outbox.application.errors import PermissionDenied
from outbox.application.events.errors import (
    ContractVersionUnpublished,
    EventTypeRetired,
    IdempotencyConflict,
)
from outbox.application.identity.errors import IdentifierTaken
from outbox.application.identity.ports import MagicLinkTarget, RecoveryTarget
from outbox.application.ports import ReadinessReport
from outbox.domain.channels import Channel
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import Message
from outbox.domain.events.domain_events import NewDomainEvent
from outbox.domain.identity.account_events import CONTRACT_VERSION, AccountEvent
from outbox.domain.identity.challenges import Challenge, ChallengeState
from outbox.domain.identity.code_budgets import Audience, CodeBudget
from outbox.domain.identity.identities import Account, Identity, LoginIdentifier
from outbox.domain.identity.invitations import (
    Invitation,
    InvitationOutcome,
    InvitationRefusal,
    InvitationState,
)
from outbox.domain.identity.magic_links import MagicLink
from outbox.domain.identity.organizations import Membership, Organization, Permission
from outbox.domain.identity.rate_limits import Backoff, RateLimit
from outbox.domain.identity.sessions import Elevation, Session
from outbox.domain.purposes import Purpose
from tests.fakes.clock import FixedClock


@attrs.define
class IdentityTables:
    """Everything the identity store and the outbox hold; copied whole for rollback."""

    identities: dict[UUID, Identity] = attrs.field(factory=dict)
    logins: dict[str, LoginIdentifier] = attrs.field(factory=dict)
    passwords: dict[UUID, str] = attrs.field(factory=dict)
    challenges: dict[UUID, Challenge] = attrs.field(factory=dict)
    sessions: dict[UUID, Session] = attrs.field(factory=dict)
    elevations: dict[UUID, Elevation] = attrs.field(factory=dict)
    # Each consumed step-up challenge that granted an elevation, and the elevation's id.
    elevated_challenges: dict[UUID, UUID] = attrs.field(factory=dict)
    organizations: dict[UUID, Organization] = attrs.field(factory=dict)
    memberships: dict[tuple[UUID, UUID], Membership] = attrs.field(factory=dict)
    invitations: dict[UUID, Invitation] = attrs.field(factory=dict)
    magic_links: dict[UUID, MagicLink] = attrs.field(factory=dict)
    messages: dict[UUID, Message] = attrs.field(factory=dict)
    code_budgets: dict[tuple[UUID, Audience, date], CodeBudget] = attrs.field(factory=dict)
    # Appended domain events by id, in append order (dicts keep insertion order).
    domain_events: dict[UUID, NewDomainEvent] = attrs.field(factory=dict)

    def copy(self) -> IdentityTables:
        """A copy whose dicts can change independently (the rows are immutable)."""
        return IdentityTables(
            **{
                field.name: dict(getattr(self, field.name))
                for field in attrs.fields(IdentityTables)
            }
        )


@attrs.define
class Faults:
    """Failures to inject: a method name (or ``commit``/``begin``) to the error it raises."""

    errors: dict[str, Exception] = attrs.field(factory=dict)
    calls: list[str] = attrs.field(factory=list)

    def check(self, name: str, *, statement: bool = True) -> None:
        """Record the call (a client statement), then raise the error injected for ``name``."""
        if statement:
            self.calls.append(name)
        error = self.errors.get(name)
        if error is not None:
            raise error


@attrs.define
class InMemoryOutbox:
    """OutboxWriter over the tables' messages, with the store's supersede and cancel rules."""

    tables: IdentityTables
    faults: Faults
    clock: FixedClock

    async def enqueue(self, message: Message, *, statement: bool = True) -> None:
        """Insert the message; supersede older live ones of its purpose and subject (a resend).

        ``statement`` False stands for an enqueue inside another SQL function.
        """
        self.faults.check("enqueue", statement=statement)
        if message.id in self.tables.messages:
            raise DuplicateMessage(str(message.id))
        if message.purpose.is_supersedable:
            for other in list(self.tables.messages.values()):
                if (
                    other.subject_id == message.subject_id
                    and other.purpose is message.purpose
                    and other.is_live
                ):
                    self.tables.messages[other.id] = other.supersede(self.clock.now())
        self.tables.messages[message.id] = message

    async def cancel_by_subject(self, *, subject_id: UUID, reason: FailureClass) -> int:
        """Withdraw every live message of ``subject_id`` that carries a secret (never a
        notice or a notification)."""
        self.faults.check("cancel_by_subject")
        cancelled = 0
        for other in list(self.tables.messages.values()):
            if other.subject_id == subject_id and other.is_live and other.purpose.carries_secret:
                self.tables.messages[other.id] = other.cancel(reason, self.clock.now())
                cancelled += 1
        return cancelled


IDENTITY_EVENT_TYPES = frozenset((kind.value, CONTRACT_VERSION) for kind in AccountEvent)


def _content(event: NewDomainEvent) -> NewDomainEvent:
    """What an idempotent replay must repeat (the trace context may differ)."""
    return attrs.evolve(event, trace_context=None)


@attrs.define
class InMemoryEventAppender:
    """DomainEventAppender over the tables' events, with the rules of
    events.append_domain_event: the producer module is the caller's (``module``), never the
    event's; a type of another module is refused, an unpublished version or a retired type too,
    and an idempotency key is per (organization, module)."""

    tables: IdentityTables
    faults: Faults
    ids: Callable[[], UUID]
    module: str = "identity"
    published: frozenset[tuple[str, int]] = IDENTITY_EVENT_TYPES
    retired: frozenset[str] = frozenset()

    async def append(self, event: NewDomainEvent) -> UUID:
        """Append ``event``; a replay of the same content returns the first id, even once its
        type retired."""
        self.faults.check("append")
        if not any(code == event.event_type for code, _ in self.published):
            raise ContractVersionUnpublished("OXE03")
        if event.module != self.module:
            raise PermissionDenied("42501")
        for event_id, earlier in self.tables.domain_events.items():
            if (earlier.organization_id, earlier.idempotency_key) == (
                event.organization_id,
                event.idempotency_key,
            ):
                if _content(earlier) != _content(event):
                    raise IdempotencyConflict("OXE01")
                return event_id
        if event.event_type in self.retired:
            raise EventTypeRetired("OXE02")
        if (event.event_type, event.contract_version) not in self.published:
            raise ContractVersionUnpublished("OXE03")
        event_id = self.ids()
        self.tables.domain_events[event_id] = event
        return event_id


@attrs.define
class InMemoryIdentityStore:
    """IdentityStore over plain dicts; the same rules as the SQL functions."""

    tables: IdentityTables
    faults: Faults
    outbox: InMemoryOutbox

    async def find_account(self, identifier: str) -> Account | None:
        """The login identifier with its identity and password hash."""
        self.faults.check("find_account")
        login = self.tables.logins.get(identifier)
        if login is None:
            return None
        return Account(
            identity_id=login.identity_id,
            identifier=login,
            password_hash=self.tables.passwords.get(login.identity_id),
        )

    async def find_verified_identifiers(self, identity_id: UUID) -> Sequence[LoginIdentifier]:
        """Verified identifiers, emails first, oldest first, then by value (as the SQL orders)."""
        self.faults.check("find_verified_identifiers")
        found = [
            login
            for login in self.tables.logins.values()
            if login.identity_id == identity_id and login.is_verified
        ]
        return sorted(found, key=lambda x: (x.channel is not Channel.EMAIL, x.created_at, x.value))

    async def add_identity(self, identity: Identity) -> None:
        """Insert an identity."""
        self.faults.check("add_identity")
        self.tables.identities[identity.id] = identity

    async def save_login_identifier(self, login: LoginIdentifier) -> None:
        """Upsert; another identity's verified identifier is refused."""
        self.faults.check("save_login_identifier")
        current = self.tables.logins.get(login.value)
        if current is not None and current.identity_id != login.identity_id and current.is_verified:
            raise IdentifierTaken
        self.tables.logins[login.value] = login

    async def save_password(self, *, identity_id: UUID, password_hash: str, now: datetime) -> None:
        """Set the password hash."""
        self.faults.check("save_password")
        self.tables.passwords[identity_id] = password_hash

    async def find_challenge(
        self, *, purpose: Purpose, identity_id: UUID | None, identifier: str | None
    ) -> Challenge | None:
        """The newest open-state challenge matching the keys."""
        self.faults.check("find_challenge")
        found = [
            c
            for c in self.tables.challenges.values()
            if c.purpose is purpose
            and c.state is ChallengeState.OPEN
            and (identity_id is None or c.identity_id == identity_id)
            and (identifier is None or c.identifier == identifier)
        ]
        return max(found, key=lambda c: c.created_at, default=None)

    async def save_challenge(self, challenge: Challenge) -> None:
        """Upsert the challenge."""
        self.faults.check("save_challenge")
        self.tables.challenges[challenge.id] = challenge

    async def add_session(self, session: Session) -> None:
        """Insert a session."""
        self.faults.check("add_session")
        self.tables.sessions[session.id] = session

    async def find_session(self, token_digest: str) -> Session | None:
        """The session with this digest."""
        self.faults.check("find_session")
        return next(
            (s for s in self.tables.sessions.values() if s.token_digest == token_digest), None
        )

    async def revoke_sessions(self, *, identity_id: UUID, now: datetime) -> int:
        """Revoke every active session of the identity."""
        self.faults.check("revoke_sessions")
        revoked = 0
        for session in list(self.tables.sessions.values()):
            if session.identity_id == identity_id and session.is_active(now):
                self.tables.sessions[session.id] = attrs.evolve(session, revoked_at=now)
                revoked += 1
        return revoked

    async def revoke_session(self, *, session_id: UUID, now: datetime) -> int:
        """Revoke the session if it is active."""
        self.faults.check("revoke_session")
        session = self.tables.sessions.get(session_id)
        if session is None or not session.is_active(now):
            return 0
        self.tables.sessions[session_id] = attrs.evolve(session, revoked_at=now)
        return 1

    async def hold_code_budget(
        self, *, identity_id: UUID, audience: Audience, day: date
    ) -> CodeBudget:
        """The day's budget, created if absent (the fake has nothing to lock)."""
        self.faults.check("hold_code_budget")
        key = (identity_id, audience, day)
        budget = self.tables.code_budgets.get(key) or CodeBudget(
            identity_id=identity_id, audience=audience, day=day
        )
        self.tables.code_budgets[key] = budget
        return budget

    async def save_code_budget(self, budget: CodeBudget) -> None:
        """Upsert the budget."""
        self.faults.check("save_code_budget")
        self.tables.code_budgets[(budget.identity_id, budget.audience, budget.day)] = budget

    async def add_elevation(self, elevation: Elevation, *, challenge_id: UUID) -> None:
        """Insert an elevation, once per consumed step-up challenge of the session's identity."""
        self.faults.check("add_elevation")
        challenge = self.tables.challenges.get(challenge_id)
        session = self.tables.sessions.get(elevation.session_id)
        if (
            challenge is None
            or challenge.purpose is not Purpose.STEP_UP
            or challenge.state is not ChallengeState.CONSUMED
            or challenge.identity_id != elevation.identity_id
            or challenge_id in self.tables.elevated_challenges
            or session is None
            or session.identity_id != elevation.identity_id
        ):
            raise PermissionDenied("an elevation needs a consumed step-up challenge")
        self.tables.elevated_challenges[challenge_id] = elevation.id
        self.tables.elevations[elevation.id] = elevation

    async def find_elevation(self, token_digest: str) -> Elevation | None:
        """The elevation with this digest."""
        self.faults.check("find_elevation")
        return next(
            (e for e in self.tables.elevations.values() if e.token_digest == token_digest), None
        )

    async def add_organization(self, organization: Organization, founder: Membership) -> None:
        """Insert the organization and the founder's membership."""
        self.faults.check("add_organization")
        self.tables.organizations[organization.id] = organization
        self.tables.memberships[(organization.id, founder.identity_id)] = founder

    async def find_organization(self, organization_id: UUID) -> Organization | None:
        """The organization."""
        self.faults.check("find_organization")
        return self.tables.organizations.get(organization_id)

    async def find_membership(
        self, *, organization_id: UUID, identity_id: UUID
    ) -> Membership | None:
        """The membership."""
        self.faults.check("find_membership")
        return self.tables.memberships.get((organization_id, identity_id))

    async def save_membership(self, membership: Membership) -> None:
        """Upsert the membership."""
        self.faults.check("save_membership")
        key = (membership.organization_id, membership.identity_id)
        self.tables.memberships[key] = membership

    async def find_invitation(self, invitation_id: UUID) -> Invitation | None:
        """The invitation."""
        self.faults.check("find_invitation")
        return self.tables.invitations.get(invitation_id)

    async def find_invitation_by_token(self, token_digest: str) -> Invitation | None:
        """The invitation with this token digest."""
        self.faults.check("find_invitation_by_token")
        return next(
            (i for i in self.tables.invitations.values() if i.token_digest == token_digest), None
        )

    async def save_invitation(self, invitation: Invitation) -> None:
        """Upsert the invitation."""
        self.faults.check("save_invitation")
        self.tables.invitations[invitation.id] = invitation

    async def enqueue_invitation(
        self,
        *,
        invitation: Invitation,
        message: Message,
        pending_max: int,
        per_organization: RateLimit,
        per_address: RateLimit,
    ) -> InvitationOutcome:
        """The permission, the sliding-window send limits and the pending limit, then the
        reissue, the insert and the enqueue, as identity.enqueue_invitation_message does."""
        self.faults.check("enqueue_invitation")
        organization_id, now = invitation.organization_id, invitation.created_at
        member = self.tables.memberships.get((organization_id, invitation.invited_by))
        if (
            organization_id not in self.tables.organizations
            or member is None
            or not member.allows(Permission.MANAGE_ACCOUNT)
        ):
            return InvitationOutcome(refusal=InvitationRefusal.PERMISSION)
        sent = [i for i in self.tables.invitations.values() if i.organization_id == organization_id]
        for refusal, rule, rows in (
            (InvitationRefusal.ORGANIZATION_RATE, per_organization, sent),
            (
                InvitationRefusal.ADDRESS_RATE,
                per_address,
                [i for i in sent if i.email == invitation.email],
            ),
        ):
            recent = sorted(
                (i.created_at for i in rows if i.created_at > now - rule.window), reverse=True
            )
            if len(recent) >= rule.limit:
                boundary = recent[rule.limit - 1]
                return InvitationOutcome(refusal=refusal, retry_after=boundary + rule.window - now)
        pending = [i for i in sent if i.is_pending(now) and i.email != invitation.email]
        if len(pending) >= pending_max:
            return InvitationOutcome(refusal=InvitationRefusal.PENDING_LIMIT)
        previous = next(
            (i for i in sent if i.email == invitation.email and i.state is InvitationState.PENDING),
            None,
        )
        if previous is not None:
            self.tables.invitations[previous.id] = previous.revoke(now)
            for other in list(self.tables.messages.values()):
                if other.subject_id == previous.id and other.is_live:
                    self.tables.messages[other.id] = other.cancel(
                        FailureClass.INVITATION_REVOKED, self.outbox.clock.now()
                    )
        self.tables.invitations[invitation.id] = invitation
        await self.outbox.enqueue(message, statement=False)
        return InvitationOutcome(withdrawn=None if previous is None else previous.id)

    async def find_magic_link_by_token(self, token_digest: str) -> MagicLink | None:
        """The magic link with this token digest."""
        self.faults.check("find_magic_link_by_token")
        return next(
            (m for m in self.tables.magic_links.values() if m.token_digest == token_digest), None
        )

    async def save_magic_link(self, link: MagicLink) -> None:
        """Upsert the link."""
        self.faults.check("save_magic_link")
        self.tables.magic_links[link.id] = link

    async def find_recovery_target(self, identifier: str) -> RecoveryTarget:
        """The verified identifier's identity and its open recovery challenge."""
        self.faults.check("find_recovery_target")
        login = self.tables.logins.get(identifier)
        if login is None or not login.is_verified:
            return RecoveryTarget(identity_id=None)
        open_ones = [
            c
            for c in self.tables.challenges.values()
            if c.purpose is Purpose.PASSWORD_RECOVERY
            and c.identifier == identifier
            and c.state is ChallengeState.OPEN
        ]
        return RecoveryTarget(
            identity_id=login.identity_id,
            challenge=max(open_ones, key=lambda c: c.created_at, default=None),
        )

    async def open_recovery_if_known(
        self, *, identity_id: UUID | None, challenge: Challenge, message: Message
    ) -> None:
        """Save the challenge (closing any other open one) and enqueue, if known."""
        self.faults.check("open_recovery_if_known")
        if identity_id is None:
            return
        for other in list(self.tables.challenges.values()):
            if (
                other.id != challenge.id
                and other.purpose is Purpose.PASSWORD_RECOVERY
                and other.identifier == challenge.identifier
                and other.state is ChallengeState.OPEN
            ):
                self.tables.challenges[other.id] = attrs.evolve(
                    other, state=ChallengeState.CLOSED, ended_at=challenge.created_at
                )
        self.tables.challenges[challenge.id] = challenge
        await self.outbox.enqueue(message, statement=False)

    async def find_magic_link_target(self, email: str) -> MagicLinkTarget:
        """The verified email's identity and its open magic link."""
        self.faults.check("find_magic_link_target")
        login = self.tables.logins.get(email)
        if login is None or not login.is_verified or login.channel is not Channel.EMAIL:
            return MagicLinkTarget(identity_id=None)
        links = [
            m
            for m in self.tables.magic_links.values()
            if m.identity_id == login.identity_id and m.email == email and m.redeemed_at is None
        ]
        return MagicLinkTarget(
            identity_id=login.identity_id,
            link=max(links, key=lambda m: m.created_at, default=None),
        )

    async def open_magic_link_if_known(
        self, *, identity_id: UUID | None, link: MagicLink, message: Message
    ) -> None:
        """Save the link and enqueue, if known."""
        self.faults.check("open_magic_link_if_known")
        if identity_id is None:
            return
        self.tables.magic_links[link.id] = link
        await self.outbox.enqueue(message, statement=False)


@attrs.define
class InMemoryUnitOfWork:
    """A unit of work over a working copy of the tables; ``commit`` publishes the copy."""

    identity: InMemoryIdentityStore
    outbox: InMemoryOutbox
    events: InMemoryEventAppender
    transactions: InMemoryIdentityTransactions

    async def commit(self) -> None:
        """Publish the working copy; a fault injected for ``commit`` refuses."""
        self.identity.faults.check("commit")
        self.transactions.tables = self.identity.tables.copy()
        self.transactions.commits += 1


@attrs.define
class InMemoryIdentityTransactions:
    """Opens units of work over ``tables``; leaving without commit drops every change.

    ``clock`` stands for the database clock of the fake outbox (supersede and cancel times).
    """

    clock: FixedClock = attrs.field(factory=FixedClock)
    tables: IdentityTables = attrs.field(factory=IdentityTables)
    faults: Faults = attrs.field(factory=Faults)
    commits: int = 0

    @asynccontextmanager
    async def begin(self) -> AsyncIterator[InMemoryUnitOfWork]:
        """A unit of work on a copy; the copy replaces the tables only at commit."""
        self.faults.check("begin")
        working = self.tables.copy()
        outbox = InMemoryOutbox(tables=working, faults=self.faults, clock=self.clock)
        yield InMemoryUnitOfWork(
            identity=InMemoryIdentityStore(tables=working, faults=self.faults, outbox=outbox),
            outbox=outbox,
            events=InMemoryEventAppender(tables=working, faults=self.faults, ids=uuid4),
            transactions=self,
        )

    def domain_events(self, event_type: AccountEvent | None = None) -> list[NewDomainEvent]:
        """Committed domain events (of ``event_type``), in append order."""
        return [
            e
            for e in self.tables.domain_events.values()
            if event_type is None or e.event_type == event_type.value
        ]

    def live_messages(self, subject_id: UUID | None = None) -> list[Message]:
        """Committed messages that can still be sent, optionally of one subject."""
        return [
            m
            for m in self.tables.messages.values()
            if m.is_live and (subject_id is None or m.subject_id == subject_id)
        ]


@attrs.frozen
class Pace:
    """One key's streak: how many sends, the last one, and when the next may go."""

    sends: int
    last_sent_at: datetime
    next_send_at: datetime


@attrs.define
class InMemoryRateLimiter:
    """Counts hits per (key, window start), and paces sends per key by the Backoff rule."""

    hits: dict[tuple[str, datetime], int] = attrs.field(factory=dict)
    paces: dict[str, Pace] = attrs.field(factory=dict)
    failure: Exception | None = None

    async def pace(self, *, key: str, now: datetime, backoff: Backoff) -> timedelta | None:
        """Count one send if the key's next send is due; else the wait."""
        if self.failure is not None:
            raise self.failure
        current = self.paces.get(key)
        if current is not None and now < current.next_send_at:
            return current.next_send_at - now
        fresh = current is None or backoff.streak_ended(last_sent_at=current.last_sent_at, now=now)
        sends = 1 if fresh or current is None else current.sends + 1
        self.paces[key] = Pace(
            sends=sends, last_sent_at=now, next_send_at=now + backoff.wait_after(sends)
        )
        return None

    async def pace_wait(self, *, key: str, now: datetime) -> timedelta | None:
        """How long until the key's next send is due; None when it is."""
        if self.failure is not None:
            raise self.failure
        current = self.paces.get(key)
        return current.next_send_at - now if current and now < current.next_send_at else None

    async def hit(self, *, key: str, window_start: datetime, window_end: datetime) -> int:
        """Count one hit and return the window's total."""
        if self.failure is not None:
            raise self.failure
        total = self.hits.get((key, window_start), 0) + 1
        self.hits[(key, window_start)] = total
        return total


@attrs.define
class SequentialSecrets:
    """Codes 000001, 000002… and tokens token-1, token-2…, kept in ``issued``."""

    issued: list[str] = attrs.field(factory=list)

    def code(self, digits: int) -> str:
        """The next code."""
        value = f"{len(self.issued) + 1:0{digits}d}"
        self.issued.append(value)
        return value

    def token(self) -> str:
        """The next token."""
        value = f"token-{len(self.issued) + 1}"
        self.issued.append(value)
        return value


@attrs.define
class StaticReadiness:
    """A readiness probe that answers what it is told."""

    report: ReadinessReport = attrs.field(factory=lambda: ReadinessReport(database_reachable=True))

    async def check(self) -> ReadinessReport:
        """The configured report."""
        return self.report
