"""One face for the operator contract tests over the in-memory fake and PostgreSQL.

A harness puts rows in place exactly as given (messages built with the domain's own
transitions, identities, challenges) and offers the store twice: as the API role
(``api``: every call names a staff actor and its elevation) and as the database operator
(``admin``). ``elevate`` gives an identity a fresh step-up and answers its token's digest.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol
from uuid import UUID

import attrs
import psycopg
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.operator_store import PostgresBacklogGauge, PostgresOperatorStore
from outbox.application.delivery.operator_ports import BacklogGauge
from outbox.application.operator.ports import OperatorStore
from outbox.domain.channels import Channel
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import Message
from outbox.domain.delivery.outcomes import Outcome
from outbox.domain.identity.challenges import Challenge, ChallengePolicy, ChallengeState
from outbox.domain.purposes import Purpose
from tests.fakes.operator_store import (
    InMemoryBacklogGauge,
    InMemoryOperatorStore,
    attempt_columns,
    attempt_detail,
)
from tests.fakes.outbox_store import RecordedAttempt

ENVELOPE = "v1.test-key.c2FsdHNhbHQ.bm9uY2Vub25jZQ.Y2lwaGVydGV4dA"
CODE_HASH = "$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$b2xkLWhhc2g"


class OperatorHarness(Protocol):
    """The store under test, seen by the API role and by the database operator."""

    @property
    def api(self) -> OperatorStore: ...
    @property
    def admin(self) -> OperatorStore: ...
    @property
    def gauge(self) -> BacklogGauge: ...

    def now(self) -> datetime: ...
    async def put(self, message: Message) -> None: ...
    async def add_identity(self, email: str) -> UUID: ...
    async def elevate(
        self, identity_id: UUID, *, lifetime: timedelta = ..., made: timedelta = ...
    ) -> str: ...
    async def put_challenge(self, challenge: Challenge) -> None: ...
    async def add_attempt(
        self, message_id: UUID, attempt: int, outcome: Outcome, provider: str
    ) -> None: ...
    async def code_hash(self, challenge_id: UUID) -> str: ...
    async def envelope(self, message_id: UUID) -> str | None: ...
    async def audit(
        self,
    ) -> list[tuple[str, UUID | None, UUID | None, UUID | None, str | None]]: ...


ELEVATION_LIFETIME = timedelta(minutes=5)
MADE = timedelta(minutes=1)  # how long before now an elevation was granted


def new_elevation_digest() -> str:
    """The digest of a fresh, random elevation token."""
    return hashlib.sha256(uuid.uuid4().bytes).hexdigest()


def code_message(
    harness: OperatorHarness,
    *,
    purpose: Purpose = Purpose.SIGN_UP,
    destination: str = "person@example.com",
    subject_id: UUID | None = None,
    age: timedelta = timedelta(minutes=1),
    expires_in: timedelta | None = timedelta(minutes=10),
) -> Message:
    """A pending message created ``age`` ago (sealed unless it is a notification)."""
    created = harness.now() - age
    notification = purpose is Purpose.NOTIFICATION
    channel = Channel.SMS if destination.startswith("+") else Channel.EMAIL
    return Message.enqueue(
        id=uuid.uuid4(),
        purpose=purpose,
        channel=channel,
        destination=destination,
        subject_id=subject_id if subject_id or notification else uuid.uuid4(),
        template=purpose.value,
        params={"expires_in_minutes": "10"},
        sealed_secret=None if notification else ENVELOPE,
        expires_at=None if expires_in is None else created + age + expires_in,
        now=created,
    )


def dead_letter(
    harness: OperatorHarness,
    *,
    purpose: Purpose = Purpose.SIGN_UP,
    destination: str = "person@example.com",
    subject_id: UUID | None = None,
    reason: FailureClass = FailureClass.REJECTED,
    ago: timedelta = timedelta(seconds=30),
    attempts: int = 1,
    expires_in: timedelta | None = timedelta(minutes=10),
) -> Message:
    """A message created a minute before it was dead-lettered, ``ago`` before now."""
    created = harness.now() - ago - timedelta(minutes=1)
    pending = code_message(
        harness,
        purpose=purpose,
        destination=destination,
        subject_id=subject_id,
        age=ago + timedelta(minutes=1),
        expires_in=expires_in,
    )
    ended = pending.cancel(reason, created + timedelta(minutes=1))
    return attrs.evolve(ended, attempts=attempts)


def challenge(
    harness: OperatorHarness,
    identity_id: UUID,
    *,
    purpose: Purpose = Purpose.SIGN_UP,
    identifier: str = "person@example.com",
    state: ChallengeState = ChallengeState.OPEN,
    expires_in: timedelta = timedelta(minutes=9),
) -> Challenge:
    """A challenge opened a minute ago that expires ``expires_in`` from now."""
    now = harness.now()
    opened = Challenge.open(
        id=uuid.uuid4(),
        purpose=purpose,
        identity_id=identity_id,
        identifier=identifier,
        channel=Channel.SMS if identifier.startswith("+") else Channel.EMAIL,
        code_hash=CODE_HASH,
        now=now - timedelta(minutes=1),
        policy=ChallengePolicy(),
    )
    ended = None if state is ChallengeState.OPEN else now - timedelta(seconds=1)
    return attrs.evolve(opened, expires_at=now + expires_in, state=state, ended_at=ended)


@attrs.define
class MemoryOperatorHarness:
    """The fake; its clock stands still."""

    admin: InMemoryOperatorStore = attrs.field(factory=InMemoryOperatorStore)
    api: InMemoryOperatorStore = attrs.field(init=False)
    gauge: InMemoryBacklogGauge = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.api = attrs.evolve(self.admin, database_operator=False)
        self.gauge = InMemoryBacklogGauge(self.admin)

    def now(self) -> datetime:
        return self.admin.now()

    async def put(self, message: Message) -> None:
        self.admin.outbox.messages[message.id] = message

    async def add_identity(self, email: str) -> UUID:
        identity_id = uuid.uuid4()
        self.admin.emails[email] = identity_id
        return identity_id

    async def elevate(
        self,
        identity_id: UUID,
        *,
        lifetime: timedelta = ELEVATION_LIFETIME,
        made: timedelta = MADE,
    ) -> str:
        digest = new_elevation_digest()
        now = self.now()
        self.admin.elevations[digest] = (identity_id, now - made, now + lifetime)
        return digest

    async def put_challenge(self, challenge: Challenge) -> None:
        self.admin.challenges[challenge.id] = challenge

    async def add_attempt(
        self, message_id: UUID, attempt: int, outcome: Outcome, provider: str
    ) -> None:
        self.admin.outbox.attempts.append(
            RecordedAttempt(
                message_id=message_id,
                attempt=attempt,
                counted=outcome.counts_attempt,
                outcome=outcome,
                provider=provider,
                recorded_at=self.now(),
                lease_token=uuid.uuid4(),
            )
        )

    async def code_hash(self, challenge_id: UUID) -> str:
        return self.admin.challenges[challenge_id].code_hash

    async def envelope(self, message_id: UUID) -> str | None:
        return self.admin.outbox.messages[message_id].sealed_secret

    async def audit(self) -> list[tuple[str, UUID | None, UUID | None, UUID | None, str | None]]:
        return [
            (a.action, a.actor_id, a.message_id, a.new_message_id, a.idempotency_key)
            for a in self.admin.audit
        ]


PUT_MESSAGE = """
INSERT INTO outbox.messages (
    id, purpose, channel, destination, subject_id, template, params, locale, state,
    attempt_count, available_at, expires_at, lease_owner, lease_token, lease_expires_at,
    created_at, published_at, dead_lettered_at, dead_letter_reason
) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
"""
PUT_ENVELOPE = "INSERT INTO outbox.envelopes (message_id, sealed) VALUES (%s, %s)"
PUT_CHALLENGE = """
INSERT INTO identity.challenges (
    id, purpose, identity_id, identifier, channel, code_hash, failed_attempts, state,
    created_at, expires_at, ended_at
) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
"""
PUT_ATTEMPT = """
INSERT INTO outbox.attempts (
    message_id, attempt, counted, outcome, failure_class, code, provider, provider_message_id,
    recorded_at, retry_at, detail
) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
"""
AUDIT = """
SELECT action, actor_id, message_id, new_message_id, idempotency_key
FROM outbox.staff_audit ORDER BY id
"""


@attrs.define
class PostgresOperatorHarness:
    """The real adapter on two pools: one acting as identity_service, one as the superuser."""

    database_url: str
    api_pool: AsyncConnectionPool
    admin_pool: AsyncConnectionPool
    api: PostgresOperatorStore = attrs.field(init=False)
    admin: PostgresOperatorStore = attrs.field(init=False)
    gauge: PostgresBacklogGauge = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.api = PostgresOperatorStore(self.api_pool)
        self.admin = PostgresOperatorStore(self.admin_pool)
        self.gauge = PostgresBacklogGauge(self.api_pool)

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def _execute(self, query: Any, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        async with await psycopg.AsyncConnection.connect(self.database_url, autocommit=True) as c:
            cursor = await c.execute(query, params)
            return await cursor.fetchall() if cursor.description else []

    async def put(self, message: Message) -> None:
        lease = message.lease
        await self._execute(
            PUT_MESSAGE,
            (
                message.id,
                message.purpose.value,
                message.channel.value,
                message.destination,
                message.subject_id,
                message.template,
                Jsonb(dict(message.params)),
                message.locale,
                message.state.value,
                message.attempts,
                message.available_at,
                message.expires_at,
                lease.owner if lease else None,
                lease.token if lease else None,
                lease.expires_at if lease else None,
                message.created_at,
                message.published_at,
                message.dead_lettered_at,
                message.dead_letter_reason.value if message.dead_letter_reason else None,
            ),
        )
        if message.sealed_secret is not None:
            await self._execute(PUT_ENVELOPE, (message.id, message.sealed_secret))

    async def add_identity(self, email: str) -> UUID:
        identity_id = uuid.uuid4()
        now = self.now()
        await self._execute(
            "INSERT INTO identity.identities (id, created_at) VALUES (%s, %s)", (identity_id, now)
        )
        await self._execute(
            "INSERT INTO identity.login_identifiers (value, channel, identity_id, created_at,"
            " verified_at) VALUES (%s, 'email', %s, %s, %s)",
            (email, identity_id, now, now),
        )
        return identity_id

    async def elevate(
        self,
        identity_id: UUID,
        *,
        lifetime: timedelta = ELEVATION_LIFETIME,
        made: timedelta = MADE,
    ) -> str:
        session, digest, now = uuid.uuid4(), new_elevation_digest(), self.now()
        await self._execute(
            "INSERT INTO identity.sessions (id, identity_id, token_digest, created_at,"
            " expires_at, staff) VALUES (%s, %s, %s, %s, %s, true)",
            (session, identity_id, new_elevation_digest(), now, now + timedelta(days=1)),
        )
        await self._execute(
            "INSERT INTO identity.elevations (id, session_id, identity_id, token_digest,"
            " created_at, expires_at) VALUES (%s, %s, %s, %s, %s, %s)",
            (
                uuid.uuid4(),
                session,
                identity_id,
                digest,
                now - made,
                now + lifetime,
            ),
        )
        return digest

    async def put_challenge(self, challenge: Challenge) -> None:
        await self._execute(
            PUT_CHALLENGE,
            (
                challenge.id,
                challenge.purpose.value,
                challenge.identity_id,
                challenge.identifier,
                challenge.channel.value,
                challenge.code_hash,
                challenge.failed_attempts,
                challenge.state.value,
                challenge.created_at,
                challenge.expires_at,
                challenge.ended_at,
            ),
        )

    async def add_attempt(
        self, message_id: UUID, attempt: int, outcome: Outcome, provider: str
    ) -> None:
        name, failure, code, receipt, retry_at = attempt_columns(outcome)
        await self._execute(
            PUT_ATTEMPT,
            (
                message_id,
                attempt,
                outcome.counts_attempt,
                name,
                failure,
                code,
                provider,
                receipt,
                self.now(),
                retry_at,
                attempt_detail(outcome),
            ),
        )

    async def code_hash(self, challenge_id: UUID) -> str:
        [(code_hash,)] = await self._execute(
            "SELECT code_hash FROM identity.challenges WHERE id = %s", (challenge_id,)
        )
        return str(code_hash)

    async def envelope(self, message_id: UUID) -> str | None:
        rows = await self._execute(
            "SELECT sealed FROM outbox.envelopes WHERE message_id = %s", (message_id,)
        )
        return str(rows[0][0]) if rows else None

    async def audit(self) -> list[tuple[str, UUID | None, UUID | None, UUID | None, str | None]]:
        return [tuple(row) for row in await self._execute(AUDIT)]
