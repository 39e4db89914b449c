"""The real app over a real database: services from the composition root, a worker that
delivers to a recording provider, and a record of every SQL statement the API sent."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any, LiteralString
from uuid import UUID

import attrs
import httpx
import psycopg
from psycopg import AsyncConnection, AsyncCursor
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.crypto.envelope import EnvelopeSealer
from outbox.adapters.crypto.hashing import Argon2idHasher, Argon2Parameters
from outbox.adapters.crypto.keyring import Keyring, SealKey
from outbox.adapters.postgres.consumer_store import PostgresConsumerStore
from outbox.adapters.postgres.dispatch_store import PostgresDispatchStore
from outbox.adapters.postgres.event_outbox_store import PostgresEventOutboxStore
from outbox.adapters.postgres.work_listener import EVENTS_CHANNEL, WorkListener
from outbox.adapters.system.ids import Uuid7Ids
from outbox.adapters.system.secrets import SystemSecrets
from outbox.application.delivery.dispatch_due_messages import DispatchDueMessages
from outbox.application.delivery.links import LinkBases
from outbox.application.delivery.ports import Delivery
from outbox.application.delivery.provider_breaker import ProviderBreaker
from outbox.application.events.process_deliveries import ProcessDeliveries
from outbox.application.events.publish_due_events import PublishDueEvents
from outbox.application.identity.request_limits import RateLimitPolicy, RequestLimits
from outbox.application.identity.security_notice_consumer import CONSUMER as NOTICES
from outbox.application.identity.services import IdentityServices
from outbox.domain.channels import Channel
from outbox.domain.delivery.retry_policy import RetryPolicy
from outbox.domain.identity.rate_limits import Backoff, RateLimit
from outbox.domain.purposes import Purpose
from outbox.entrypoints.bootstrap.api import build_identity_services
from outbox.entrypoints.bootstrap.consumers import shipped_consumers
from outbox.entrypoints.http.app import create_app
from outbox.entrypoints.settings.identity import IdentitySettings
from outbox.entrypoints.settings.tree import load_settings
from tests.fakes.clock import FixedClock
from tests.fakes.providers import RecordingProvider
from tests.fakes.renderer import RecordingRenderer
from tests.fakes.telemetry import RecordingTelemetry

SEALER = EnvelopeSealer(Keyring((SealKey("test", bytes(range(32))),)))
INVITATION_BASE = "https://app.example/join"
MAGIC_LINK_BASE = "https://app.example/sign-in"
PASSWORD = "correct horse battery"
GENEROUS = RateLimit(limit=1000, window=timedelta(minutes=1))
UNPACED = Backoff(first_wait=timedelta(0), max_wait=timedelta(0))


def generous_limits() -> RateLimitPolicy:
    """Limits no ordinary test reaches; tests of the limits set their own."""
    return RateLimitPolicy(
        per_client=GENEROUS,
        per_destination=UNPACED,
        sms_per_country_prefix=GENEROUS,
        organizations_per_account=GENEROUS,
        invitations_per_organization=GENEROUS,
        invitations_per_address=GENEROUS,
    )


class StatementLog:
    """Every statement the API's connections sent, in order (parameters left out)."""

    def __init__(self) -> None:
        self.statements: list[str] = []
        self.recording = False

    def cursor_class(self) -> type[AsyncCursor[Any]]:
        """A cursor class that appends each executed query to this log."""
        log = self

        class RecordingCursor(AsyncCursor[Any]):
            async def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
                if log.recording:
                    log.statements.append(str(query))
                return await super().execute(query, params, **kwargs)

        return RecordingCursor


async def open_api_pool(
    database_url: str, log: StatementLog, *, role: str = "identity_service"
) -> AsyncConnectionPool:
    """A pool acting as ``role`` (the public API's by default; ``staff_service`` is the
    admin listener's) whose cursors record their statements."""

    async def configure(conn: AsyncConnection) -> None:
        await conn.execute(f"SET ROLE {role}")

    pool: AsyncConnectionPool = AsyncConnectionPool(
        database_url,
        min_size=1,
        max_size=4,
        kwargs={"autocommit": True, "cursor_factory": log.cursor_class()},
        configure=configure,
        open=False,
    )
    await pool.open(wait=True)
    return pool


@attrs.define
class Api:
    """A client of the real app, and the worker side of the same database."""

    client: httpx.AsyncClient
    services: IdentityServices
    clock: FixedClock
    telemetry: RecordingTelemetry
    provider: RecordingProvider
    dispatch: DispatchDueMessages
    publish: PublishDueEvents
    consume: ProcessDeliveries
    database_url: str
    log: StatementLog

    def tighten(self, **limits: RateLimit) -> None:
        """Replace rate limits in every use case (the services are rebuilt around them)."""
        for name in attrs.fields_dict(type(self.services)):
            use_case = getattr(self.services, name)
            current = getattr(use_case, "limits", None)
            if isinstance(current, RequestLimits):
                policy = attrs.evolve(current.policy, **limits)
                object.__setattr__(use_case, "limits", attrs.evolve(current, policy=policy))

    async def post(
        self,
        path: str,
        body: Any = None,
        token: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        """POST ``body`` as JSON (with a bearer token and other headers if given)."""
        sent = {"Authorization": f"Bearer {token}"} if token else {}
        return await self.client.post(path, json=body, headers=sent | (headers or {}))

    async def deliver(self) -> list[Delivery]:
        """Run the worker until nothing is due (publish the domain events, let the
        identity.security_notices consumer handle them, send the messages); return what reached
        the provider."""
        before = len(self.provider.sent)
        while (await self.publish()).claimed:
            pass
        while (await self.consume(NOTICES)).claimed:
            pass
        while (await self.dispatch()).claimed:
            pass
        return self.provider.sent[before:]

    async def deliver_one(self) -> Delivery:
        """Run the worker; exactly one message must reach the provider."""
        [delivery] = await self.deliver()
        return delivery

    async def rows(self, query: LiteralString, *params: Any) -> list[tuple[Any, ...]]:
        """Rows of ``query`` run as superuser (test inspection only)."""
        async with await psycopg.AsyncConnection.connect(self.database_url, autocommit=True) as c:
            cursor = await c.execute(query, params)
            return await cursor.fetchall()

    async def execute(self, query: LiteralString) -> None:
        """Run ``query`` as superuser (fault injection)."""
        async with await psycopg.AsyncConnection.connect(self.database_url, autocommit=True) as c:
            await c.execute(query)

    async def sealed_code(self, subject_id: UUID | None = None) -> str:
        """The code of the newest live message (of ``subject_id``), opened as the worker would."""
        rows = await self.rows(
            "SELECT m.id, m.purpose, e.sealed FROM outbox.messages m"
            " JOIN outbox.envelopes e ON e.message_id = m.id"
            " WHERE m.state = 'pending' AND (%s::uuid IS NULL OR m.subject_id = %s::uuid)"
            " ORDER BY m.created_at DESC, m.id DESC LIMIT 1",
            subject_id,
            subject_id,
        )
        message_id, purpose, sealed = rows[0]
        return SEALER.open(message_id=message_id, purpose=Purpose(purpose), envelope=sealed)

    async def messages(self, purpose: str) -> list[tuple[Any, ...]]:
        """(state, dead_letter_reason, subject_id, has envelope) of each message, oldest first."""
        return await self.rows(
            "SELECT m.state, m.dead_letter_reason, m.subject_id, e.message_id IS NOT NULL"
            " FROM outbox.messages m LEFT JOIN outbox.envelopes e ON e.message_id = m.id"
            " WHERE m.purpose = %s ORDER BY m.created_at, m.id",
            purpose,
        )

    async def signed_up(self, identifier: str = "alice@example.com") -> str:
        """Sign up, confirm with the delivered code, sign in; return the bearer token.

        The account's own account_verified notice is delivered here, so what a test delivers
        next is what it did itself."""
        response = await self.post("/sign-ups", {"identifier": identifier})
        assert 201 == response.status_code, response.text
        code = (await self.deliver_one()).content.text
        response = await self.post(
            "/sign-ups/confirmations",
            {"identifier": identifier, "code": code, "password": PASSWORD},
        )
        assert 204 == response.status_code, response.text
        [notice] = await self.deliver()
        assert "security_notice" == notice.content.subject
        return await self.sign_in(identifier)

    async def elevated(self, token: str) -> str:
        """Step the session of ``token`` up with the delivered code; return the elevation token."""
        response = await self.post("/step-ups", token=token)
        assert 201 == response.status_code, response.text
        code = (await self.deliver_one()).content.text
        response = await self.post("/step-ups/confirmations", {"code": code}, token=token)
        assert 201 == response.status_code, response.text
        return str(response.json()["elevationToken"])

    async def add_sign_in_method(self, token: str, identifier: str) -> Any:
        """Step up, then ask for a code to add ``identifier``; return the response."""
        elevation = await self.elevated(token)
        return await self.post(
            "/sign-in-methods",
            {"identifier": identifier},
            token=token,
            headers={"Elevation-Token": elevation},
        )

    async def sign_in(self, identifier: str, password: str = PASSWORD) -> str:
        """Sign in; return the bearer token."""
        response = await self.post("/sessions", {"identifier": identifier, "password": password})
        assert 201 == response.status_code, response.text
        return str(response.json()["token"])


def token_of(delivery: Delivery) -> str:
    """The token in a delivered link (``…#token=…``)."""
    match = re.search(r"#token=(\S+)", delivery.content.text)
    assert match is not None, "no link in the message"
    return match.group(1)


def problem_type(response: Any) -> str:
    """The problem type URN of an error response."""
    assert "application/problem+json" == response.headers["content-type"]
    return str(json.loads(response.content)["type"])


@attrs.frozen(kw_only=True)
class ApiSettings:
    """What a test may change about the service."""

    identity: IdentitySettings = attrs.field(
        factory=lambda: attrs.evolve(load_settings({}).identity, rate_limits=generous_limits())
    )


async def running_api(
    database_url: str, dispatch_store: PostgresDispatchStore, settings: ApiSettings
) -> AsyncIterator[Api]:
    """Build the services the way the composition root does and serve them in-process."""
    log = StatementLog()
    pool = await open_api_pool(database_url, log)
    clock = FixedClock(datetime.now(UTC).replace(microsecond=0))
    telemetry = RecordingTelemetry()
    services = build_identity_services(
        pool=pool,
        sealer=SEALER,
        hasher=Argon2idHasher(Argon2Parameters.cheapest()),
        clock=clock,
        ids=Uuid7Ids(),
        secret_source=SystemSecrets(),
        telemetry=telemetry,
        identity=settings.identity,
    )
    provider = RecordingProvider()
    dispatch = DispatchDueMessages(
        store=dispatch_store,
        sealer=SEALER,
        renderer=RecordingRenderer(),
        providers={Channel.EMAIL: provider, Channel.SMS: provider},
        clock=clock,
        telemetry=RecordingTelemetry(),
        policy=RetryPolicy(),
        breaker=ProviderBreaker(),
        links=LinkBases(invitation=INVITATION_BASE, magic_link=MAGIC_LINK_BASE),
        owner="identity-tests",
    )
    events_pool, publish, consume = await open_events_path(database_url, pool, clock)
    try:
        # The app runs in this event loop (Litestar's own test client would run it in a
        # thread, away from the loop the pool belongs to).
        transport = httpx.ASGITransport(app=create_app(services))
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            yield Api(
                client=client,
                services=services,
                clock=clock,
                telemetry=telemetry,
                provider=provider,
                dispatch=dispatch,
                publish=publish,
                consume=consume,
                database_url=database_url,
                log=log,
            )
    finally:
        await events_pool.close()
        await pool.close()


async def open_events_path(
    database_url: str, api_pool: AsyncConnectionPool, clock: FixedClock
) -> tuple[AsyncConnectionPool, PublishDueEvents, ProcessDeliveries]:
    """The events lane's publication (a pool of its own, as outbox_worker) and the shipped
    consumer on ``api_pool`` (identity_service, as a real consumer process acts)."""
    events_pool: AsyncConnectionPool = AsyncConnectionPool(
        database_url,
        min_size=1,
        max_size=2,
        kwargs={"autocommit": True},
        configure=_as_worker,
        open=False,
    )
    await events_pool.open(wait=True)
    publish = PublishDueEvents(
        store=PostgresEventOutboxStore(events_pool, WorkListener(database_url, EVENTS_CHANNEL)),
        targets=(),
        clock=clock,
        telemetry=RecordingTelemetry(),
        policy=RetryPolicy(),
        owner="identity-tests",
    )
    consume = ProcessDeliveries(
        store=PostgresConsumerStore(api_pool),
        registry=shipped_consumers(clock=clock, ids=Uuid7Ids()),
        clock=clock,
        telemetry=RecordingTelemetry(),
        owner="identity-tests",
    )
    return events_pool, publish, consume


async def _as_worker(conn: AsyncConnection) -> None:
    await conn.execute("SET ROLE outbox_worker")
