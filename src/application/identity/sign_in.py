"""Sign in with an identifier and a password: a new session and its bearer token."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from uuid import UUID

import attrs

from outbox.application.errors import InvalidField
from outbox.application.identity.errors import InvalidCredentials, RateLimited
from outbox.application.identity.inputs import parse_identifier
from outbox.application.identity.ports import IdentityTransactions, IdentityUnitOfWork
from outbox.application.identity.request_limits import RequestLimits
from outbox.application.identity.security_notices import SecurityNotices
from outbox.application.ports import Clock, Ids, SecretHasher, SecretSource, Telemetry
from outbox.domain.identity.identifiers import Identifier
from outbox.domain.identity.security_changes import SecurityChange
from outbox.domain.identity.sessions import Session
from outbox.domain.identity.tokens import token_digest

ROUTE = "sessions"
# When a streak of failed sign-ins has made the next one wait this long (the sixth failure
# in a row), the account's owner is told, at most once an hour.
NOTICE_AFTER = timedelta(seconds=30)


class _WrongPassword(InvalidCredentials):
    """The identifier is an account's and the password was wrong (answered as any refusal)."""

    def __init__(self, identity_id: UUID) -> None:
        super().__init__()
        self.identity_id = identity_id


@attrs.frozen(kw_only=True)
class SessionGrant:
    """A bearer token (shown once, stored only as a digest) and when it stops working."""

    identity_id: UUID
    token: str = attrs.field(repr=False)
    expires_at: datetime


@attrs.frozen(kw_only=True)
class SessionStarter:
    """Mints a session token and stores its digest, inside a unit of work."""

    secrets: SecretSource
    ids: Ids
    lifetime: timedelta = timedelta(hours=12)

    async def start(
        self, uow: IdentityUnitOfWork, *, identity_id: UUID, now: datetime
    ) -> SessionGrant:
        """Add a session for ``identity_id`` and return its token."""
        token = self.secrets.token()
        session = Session.start(
            id=self.ids.new_id(),
            identity_id=identity_id,
            token_digest=token_digest(token),
            now=now,
            lifetime=self.lifetime,
        )
        await uow.identity.add_session(session)
        return SessionGrant(identity_id=identity_id, token=token, expires_at=session.expires_at)


@attrs.frozen(kw_only=True)
class SignInCommand:
    """An identifier and a password."""

    identifier: str = attrs.field(repr=False)
    password: str = attrs.field(repr=False)
    client_address: str = attrs.field(repr=False)


@attrs.frozen(kw_only=True)
class SignIn:
    """Checks the password of a verified identifier and starts a session.

    Unknown identifiers, unverified ones and wrong passwords get one answer after the
    same Argon2id work, and each of them paces the identifier's next sign-in
    (RequestLimits.sign_in_failed); a paced sign-in is refused before any password work.
    """

    transactions: IdentityTransactions
    sessions: SessionStarter
    hasher: SecretHasher
    limits: RequestLimits
    notices: SecurityNotices
    clock: Clock
    telemetry: Telemetry

    async def __call__(self, command: SignInCommand) -> SessionGrant:
        """Sign in; raises InvalidCredentials or RateLimited."""
        now = self.clock.now()
        await self.limits.client(ROUTE, command.client_address, now)
        try:
            identifier = parse_identifier(command.identifier)
        except InvalidField:
            raise InvalidCredentials from None
        wait = await self.limits.sign_in_wait(identifier, now)
        if wait is not None:
            self.telemetry.event("identity.sign_in.paced", level="warning")
            raise RateLimited(wait)
        try:
            return await self._sign_in(identifier, command.password, now)
        except InvalidCredentials as refused:
            await self.limits.sign_in_failed(identifier, now)
            # The same statements for known and unknown identifiers; only the notice itself
            # (at most one an hour) is an account's.
            wait = await self.limits.sign_in_wait(identifier, now)
            long_streak = wait is not None and wait >= NOTICE_AFTER
            due = long_streak and await self.limits.sign_in_notice_due(identifier, now)
            if due and isinstance(refused, _WrongPassword):
                await self._warn_owner(refused.identity_id, now)
            raise InvalidCredentials from None

    async def _warn_owner(self, identity_id: UUID, now: datetime) -> None:
        """Tell the owner that a streak of failed sign-ins grew long."""
        async with self.transactions.begin() as uow:
            await self.notices.send(
                uow, identity_id=identity_id, change=SecurityChange.SIGN_IN_FAILURES, now=now
            )
            await uow.commit()
        self.telemetry.event("identity.sign_in.owner_warned", identity_id=str(identity_id))

    async def _sign_in(self, identifier: Identifier, password: str, now: datetime) -> SessionGrant:
        # The password is checked outside any transaction: no row lock or pooled connection is
        # held through the Argon2id work.
        async with self.transactions.begin() as uow:
            account = await uow.identity.find_account(identifier.value)
        if account is None or not account.identifier.is_verified or account.password_hash is None:
            await asyncio.to_thread(self.hasher.hash, password)
            # The same event as a wrong password: counters must not tell who has an account.
            self.telemetry.event(
                "identity.sign_in.refused", level="warning", known=False, identity_id=None
            )
            raise InvalidCredentials
        if not await asyncio.to_thread(self.hasher.verify, password, account.password_hash):
            self.telemetry.event(
                "identity.sign_in.refused",
                level="warning",
                known=True,
                identity_id=str(account.identity_id),
            )
            raise _WrongPassword(account.identity_id)
        async with self.transactions.begin() as uow:
            # A password changed meanwhile (a recovery ending every session) wins the race.
            again = await uow.identity.find_account(identifier.value)
            if again is None or again.password_hash != account.password_hash:
                raise InvalidCredentials
            grant = await self.sessions.start(uow, identity_id=account.identity_id, now=now)
            await uow.commit()
        self.telemetry.event("identity.sign_in.succeeded", identity_id=str(grant.identity_id))
        return grant
