"""Console sessions: a cookie naming server-side state that holds the staff member's tokens.

The cookie carries only a random session id (HttpOnly, SameSite=Strict, Secure unless the
console is served over loopback http); the bearer and elevation tokens stay in this
process's memory, never in a page, a URL or a table. A session ends after ``idle`` without
a request, after ``lifetime`` in all, at sign-out, or when its bearer session ends.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from datetime import datetime, timedelta
from uuid import UUID

import attrs

COOKIE = "outbox_console"
SECURE_COOKIE = "__Host-outbox_console"  # the prefix pins it to this host, path / and Secure
PRE_COOKIE = "outbox_console_pre"  # the signed-out CSRF token of the sign-in form
MAX_SESSIONS = 10_000  # oldest dropped beyond this: memory stays bounded


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


@attrs.define(kw_only=True)
class ConsoleSession:
    """One signed-in console: the identity's tokens, the CSRF token, and its clocks."""

    identity_id: UUID
    bearer: str = attrs.field(repr=False)
    csrf: str = attrs.field(repr=False)
    started_at: datetime
    seen_at: datetime
    ends_at: datetime  # the absolute end: the console's lifetime or the bearer's, sooner
    elevation: str | None = attrs.field(default=None, repr=False)
    elevation_expires_at: datetime | None = None


@attrs.define
class ConsoleSessions:
    """The console sessions of this process, keyed by the digest of their cookie."""

    clock: Callable[[], datetime]
    idle: timedelta = timedelta(minutes=15)
    lifetime: timedelta = timedelta(hours=8)
    _by_digest: dict[str, ConsoleSession] = attrs.field(factory=dict, alias="_by_digest")

    def start(self, *, identity_id: UUID, bearer: str, bearer_expires_at: datetime) -> str:
        """A new session's cookie value (a fresh id at every sign-in: no fixation)."""
        now = self.clock()
        cookie = secrets.token_urlsafe(32)
        if len(self._by_digest) >= MAX_SESSIONS:
            oldest = min(self._by_digest, key=lambda d: self._by_digest[d].seen_at)
            del self._by_digest[oldest]
        self._by_digest[_digest(cookie)] = ConsoleSession(
            identity_id=identity_id,
            bearer=bearer,
            csrf=secrets.token_urlsafe(32),
            started_at=now,
            seen_at=now,
            ends_at=min(now + self.lifetime, bearer_expires_at),
        )
        return cookie

    def find(self, cookie: str | None) -> ConsoleSession | None:
        """The live session the cookie names (its idle clock restarted), else None; an
        expired one is forgotten."""
        if not cookie:
            return None
        digest = _digest(cookie)
        session = self._by_digest.get(digest)
        if session is None:
            return None
        now = self.clock()
        if now >= session.ends_at or now - session.seen_at >= self.idle:
            del self._by_digest[digest]
            return None
        session.seen_at = now
        return session

    def end(self, cookie: str | None) -> ConsoleSession | None:
        """Forget the session the cookie names; the session, if there was one."""
        if not cookie:
            return None
        return self._by_digest.pop(_digest(cookie), None)
