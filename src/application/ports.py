"""The shared kernel's ports: time, ids, secrets, sealing, hashing, telemetry and readiness.

Every context uses these; each context's own ports live in its package
(``outbox.application.delivery.ports``, ``outbox.application.identity.ports``…).
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol
from uuid import UUID

import attrs

from outbox.domain.purposes import Purpose


class Clock(Protocol):
    """The one source of the current time."""

    def now(self) -> datetime:
        """The current time, timezone-aware, in UTC."""
        ...


class Ids(Protocol):
    """The one source of new identifiers."""

    def new_id(self) -> UUID:
        """A new time-ordered (UUIDv7) identifier for a message or a row."""
        ...


class Sealer(Protocol):
    """Seals and opens secrets bound to one message id and purpose."""

    def seal(self, *, message_id: UUID, purpose: Purpose, plaintext: str) -> str:
        """Return the envelope text for ``plaintext`` under the newest key."""
        ...

    def open(self, *, message_id: UUID, purpose: Purpose, envelope: str) -> str:
        """Return the plaintext; raises EnvelopeInvalid for any envelope that does not open."""
        ...


class SecretHasher(Protocol):
    """Hashes passwords, codes and tokens for storage (Argon2id) and verifies them."""

    def hash(self, secret: str) -> str:
        """Return a self-describing hash (PHC string) of ``secret``."""
        ...

    def verify(self, secret: str, hashed: str) -> bool:
        """Whether ``secret`` matches ``hashed``; False (never an error) for a malformed hash."""
        ...


Field = str | int | float | bool | None


class Telemetry(Protocol):
    """Named events with flat fields, counters and timings; never a secret in a field."""

    def event(
        self, name: str, /, *, level: str = "info", **fields: str | int | float | bool | None
    ) -> None:
        """Report that something happened (dotted snake_case name)."""
        ...

    def count(self, name: str, /, value: float = 1, **labels: str) -> None:
        """Add ``value`` to a counter."""
        ...

    def observe(self, name: str, /, value: float, **labels: str) -> None:
        """Record one observation (a duration in seconds, a batch size)."""
        ...

    def forget(self, name: str, /) -> None:
        """Drop every labelled series of gauge ``name`` (before setting the current ones,
        when the set of label values changes between observations)."""
        ...


class SecretSource(Protocol):
    """Draws one-time codes and bearer tokens from a cryptographically secure source."""

    def code(self, digits: int) -> str:
        """A uniformly random code of ``digits`` decimal digits."""
        ...

    def token(self) -> str:
        """A URL-safe token carrying 256 random bits."""
        ...


@attrs.frozen(kw_only=True)
class ReadinessReport:
    """Whether the database answers, the process's role exists, and every migration is applied.

    ``error_code`` is the SQLSTATE (or driver error name) an unreachable database gave;
    ``missing_role`` the role this process acts as that is absent or not granted to its login.
    """

    database_reachable: bool
    pending_migrations: tuple[str, ...] = ()
    missing_role: str | None = None
    error_code: str = ""

    @property
    def failed(self) -> str:
        """The first failing check (``database_unreachable``, ``role_missing``,
        ``migrations_pending``), or "" when ready."""
        if not self.database_reachable:
            return "database_unreachable"
        if self.missing_role is not None:
            return "role_missing"
        if self.pending_migrations:
            return "migrations_pending"
        return ""

    @property
    def hint(self) -> str:
        """What an operator should do about the failing check, or ""."""
        return {
            "database_unreachable": "check the database URL and that PostgreSQL is up",
            "role_missing": (
                f"grant {self.missing_role} to the login role, or run `outboxctl db migrate`"
                " (it creates the roles)"
            ),
            "migrations_pending": "run `outboxctl db migrate`",
        }.get(self.failed, "")

    @property
    def ready(self) -> bool:
        """Whether the service can take traffic."""
        return not self.failed


class ReadinessProbe(Protocol):
    """Checks what the API needs to serve requests."""

    async def check(self) -> ReadinessReport:
        """Report reachability and pending migrations; never raises for a database failure."""
        ...
