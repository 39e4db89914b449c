"""The real app with the staff routes, the real CLI, and the worker, over one database.

Builds the identity and operator services the way the composition root does, on a pool
acting as identity_service; ``outboxctl`` runs in a thread against the same database as the
database operator (the superuser URL), with the same seal key as the worker.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import attrs
import httpx
from click.testing import Result
from psycopg_pool import AsyncConnectionPool
from typer.testing import CliRunner

from outbox.adapters.crypto.base64url import encode
from outbox.adapters.crypto.hashing import Argon2idHasher, Argon2Parameters
from outbox.adapters.postgres.dispatch_store import PostgresDispatchStore
from outbox.adapters.postgres.operator_store import PostgresOperatorStore
from outbox.adapters.postgres.pool import open_pool
from outbox.adapters.system.ids import Uuid7Ids
from outbox.adapters.system.secrets import SystemSecrets
from outbox.application.delivery.copy_routes import ChannelRoutes
from outbox.application.delivery.dispatch_due_messages import DispatchDueMessages
from outbox.application.delivery.links import LinkBases
from outbox.application.delivery.provider_breaker import ProviderBreaker
from outbox.application.identity.services import IdentityServices
from outbox.application.operator.services import OperatorServices
from outbox.domain.channels import Channel
from outbox.domain.delivery.failures import DeliveryFailure, FailureClass
from outbox.domain.delivery.retry_policy import RetryPolicy
from outbox.domain.identity.challenges import ChallengePolicy
from outbox.entrypoints.bootstrap.api import build_identity_services
from outbox.entrypoints.bootstrap.operator import build_operator_services
from outbox.entrypoints.cli.app import app as outboxctl
from outbox.entrypoints.http.app import create_admin_app, create_app
from outbox.entrypoints.observability import new_registry
from tests.fakes.clock import FixedClock
from tests.fakes.providers import RecordingProvider
from tests.fakes.renderer import RecordingRenderer
from tests.fakes.telemetry import RecordingTelemetry
from tests.integration.identity.api import (
    INVITATION_BASE,
    MAGIC_LINK_BASE,
    PASSWORD,
    SEALER,
    Api,
    ApiSettings,
    StatementLog,
    open_api_pool,
    open_events_path,
)

STAFF = "staff@example.com"
BASE = "/platform-admin/security-outbox"
TEST_KEY_LINE = f"test:{encode(bytes(range(32)))}"  # SEALER's key, for outboxctl


@attrs.frozen
class StaffCaller:
    """A signed-in staff member and the elevation token of a fresh step-up."""

    identity_id: UUID
    token: str
    elevation: str

    def headers(self) -> dict[str, str]:
        """The bearer and elevation tokens a staff route takes."""
        return {"Authorization": f"Bearer {self.token}", "Elevation-Token": self.elevation}


@attrs.frozen
class DeadCode:
    """A one-time code message the provider rejected, and the code it carried."""

    message_id: UUID
    challenge_id: UUID
    code: str


@attrs.define
class StaffWorld:
    """The identity API with the staff routes, outboxctl, the worker and the database."""

    api: Api  # the public listener
    staff_client: httpx.AsyncClient  # the admin listener: staff sign-in, step-up, staff routes
    staff_services: IdentityServices  # the admin listener's identity services (staff sessions)
    operator: OperatorServices
    admin: PostgresOperatorStore
    env: dict[str, str]

    async def cli(self, *args: str) -> Result:
        """Run ``outboxctl`` (in a thread: it runs its own event loop)."""
        return await asyncio.to_thread(CliRunner().invoke, outboxctl, list(args), env=self.env)

    async def cli_json(self, *args: str) -> Any:
        """Run ``outboxctl ... --json``; it must succeed and print only JSON."""
        result = await self.cli(*args, "--json")
        assert 0 == result.exit_code, result.stderr
        return json.loads(result.stdout)

    async def get(
        self, path: str, caller: StaffCaller, *, elevation: str | None = "", **params: Any
    ) -> httpx.Response:
        """GET a staff route with the caller's bearer and elevation tokens (``None``: none)."""
        headers = {"Authorization": f"Bearer {caller.token}"}
        token = caller.elevation if elevation == "" else elevation
        if token is not None:
            headers["Elevation-Token"] = token
        return await self.staff_client.get(BASE + path, params=params, headers=headers)

    async def reissue(
        self,
        message_id: UUID,
        caller: StaffCaller,
        *,
        key: str = "key-1",
        elevation: str | None = "",
    ) -> httpx.Response:
        """POST a reissue with the caller's bearer and elevation tokens (``None``: none)."""
        headers = {"Authorization": f"Bearer {caller.token}", "Idempotency-Key": key}
        token = caller.elevation if elevation == "" else elevation
        if token is not None:
            headers["Elevation-Token"] = token
        return await self.staff_client.post(
            f"{BASE}/dead-letters/{message_id}/reissues", headers=headers
        )

    async def staff(self, email: str = STAFF, *, grant: bool = True) -> StaffCaller:
        """Sign up, be made staff by the database operator, sign in and step up."""
        token = await self.api.signed_up(email)
        if grant:
            await self.admin.grant_staff(email)
        [(identity_id,)] = await self.api.rows(
            "SELECT identity_id FROM identity.login_identifiers WHERE value = %s", email
        )
        # Staff sign in and step up at the admin listener: only its sessions act for staff.
        response = await self.staff_client.post(
            "/sessions", json={"identifier": email, "password": PASSWORD}
        )
        assert 201 == response.status_code, response.text
        token = response.json()["token"]
        bearer = {"Authorization": f"Bearer {token}"}
        response = await self.staff_client.post("/step-ups", headers=bearer)
        assert 201 == response.status_code, response.text
        code = (await self.api.deliver_one()).content.text
        response = await self.staff_client.post(
            "/step-ups/confirmations", json={"code": code}, headers=bearer
        )
        assert 201 == response.status_code, response.text
        return StaffCaller(identity_id, token, response.json()["elevationToken"])

    async def dead_code(self, identifier: str = "bob@example.com") -> DeadCode:
        """Sign ``identifier`` up while the provider rejects it: a REJECTED dead letter."""
        response = await self.api.post("/sign-ups", {"identifier": identifier})
        assert 201 == response.status_code, response.text
        [(message_id, challenge_id)] = await self.api.rows(
            "SELECT id, subject_id FROM outbox.messages WHERE destination = %s"
            " AND state = 'pending'",
            identifier,
        )
        code = await self.api.sealed_code(challenge_id)
        self.api.provider.failures_for[identifier] = DeliveryFailure(
            failure_class=FailureClass.REJECTED, code="550"
        )
        try:
            assert [] == await self.api.deliver()
        finally:
            del self.api.provider.failures_for[identifier]
        return DeadCode(message_id, challenge_id, code)

    async def pending(self) -> list[UUID]:
        """The ids of pending messages, oldest first."""
        rows = await self.api.rows(
            "SELECT id FROM outbox.messages WHERE state = 'pending' ORDER BY created_at, id"
        )
        return [row[0] for row in rows]


async def running_staff_world(
    database_url: str,
    dispatch_store: PostgresDispatchStore,
    data_dir: Path,
    *,
    unserved: frozenset[Channel] = frozenset(),
) -> AsyncIterator[StaffWorld]:
    """Serve the identity and staff routes in-process; the CLI gets the same database.

    ``unserved``: channels with no provider, for the worker and in the operator's settings.
    """
    settings = ApiSettings()
    log = StatementLog()
    pool = await open_api_pool(database_url, log)
    staff_pool = await open_api_pool(database_url, log, role="staff_service")
    admin_pool: AsyncConnectionPool = await open_pool(database_url, min_size=1, max_size=2)
    clock = FixedClock(datetime.now(UTC).replace(microsecond=0))
    telemetry = RecordingTelemetry()
    hasher = Argon2idHasher(Argon2Parameters.cheapest())
    parts: dict[str, Any] = {
        "pool": pool,
        "sealer": SEALER,
        "hasher": hasher,
        "clock": clock,
        "ids": Uuid7Ids(),
        "secret_source": SystemSecrets(),
        "telemetry": telemetry,
    }
    services = build_identity_services(identity=settings.identity, **parts)
    staff_parts = parts | {"pool": staff_pool}
    staff_services = build_identity_services(identity=settings.identity, staff=True, **staff_parts)
    # What the admin listener reads from OUTBOX_CHANNEL_*: the worker's providers below.
    routes = ChannelRoutes(
        {c: None if c in unserved else "smtp" for c in (Channel.EMAIL, Channel.SMS)}
    )
    operator = build_operator_services(challenges=ChallengePolicy(), routes=routes, **staff_parts)
    # Named as a real provider: pauses name the providers this package sends through.
    provider = RecordingProvider(provider_name="smtp")
    dispatch = DispatchDueMessages(
        store=dispatch_store,
        sealer=SEALER,
        renderer=RecordingRenderer(),
        providers={c: provider for c in (Channel.EMAIL, Channel.SMS) if c not in unserved},
        clock=clock,
        telemetry=RecordingTelemetry(),
        policy=RetryPolicy(),
        breaker=ProviderBreaker(),
        links=LinkBases(invitation=INVITATION_BASE, magic_link=MAGIC_LINK_BASE),
        owner="operator-tests",
    )
    env = {
        "OUTBOX_DATABASE_URL": database_url,
        "OUTBOX_SEAL_KEYS": TEST_KEY_LINE,
        "OUTBOX_DATA_DIR": str(data_dir),
        "OUTBOX_LOG_LEVEL": "warning",
    }
    events_pool, publish, consume = await open_events_path(database_url, pool, clock)
    try:
        public = httpx.ASGITransport(app=create_app(services))
        admin = httpx.ASGITransport(
            app=create_admin_app(staff_services, operator=operator, registry=new_registry())
        )
        async with (
            httpx.AsyncClient(transport=public, base_url="http://testserver") as client,
            httpx.AsyncClient(transport=admin, base_url="http://admin") as staff_client,
        ):
            yield StaffWorld(
                api=Api(
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
                ),
                staff_client=staff_client,
                staff_services=staff_services,
                operator=operator,
                admin=PostgresOperatorStore(admin_pool),
                env=env,
            )
    finally:
        await events_pool.close()
        await pool.close()
        await staff_pool.close()
        await admin_pool.close()
