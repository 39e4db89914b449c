"""Both HTTP listeners of one API process, in-process, with the production telemetry.

The public app and the admin app are built the way the composition root builds them and
share one metrics registry, so a test can act on the public port and scrape the admin
port's ``/metrics`` in between. The pool records every statement the API sends (through
the cursor, parameters left out), so two requests can be compared statement by statement.
"""

from __future__ import annotations

import io
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import attrs
import httpx
import psycopg
import structlog
from prometheus_client.parser import text_string_to_metric_families

from adapters.crypto.hashing import Argon2idHasher, Argon2Parameters
from adapters.system.ids import Uuid7Ids
from adapters.system.secrets import SystemSecrets
from domain.identity.challenges import ChallengePolicy
from domain.purposes import Purpose
from entrypoints.bootstrap.api import build_identity_services
from entrypoints.bootstrap.operator import build_operator_services
from entrypoints.http.app import create_admin_app, create_app
from entrypoints.observability import build_telemetry, configure_logging, new_registry
from tests.fakes.clock import FixedClock
from tests.integration.identity.api import (
    PASSWORD,
    SEALER,
    ApiSettings,
    StatementLog,
    open_api_pool,
)

NEWEST_SEALED = """
SELECT m.id, m.purpose, e.sealed FROM outbox.messages AS m
JOIN outbox.envelopes AS e ON e.message_id = m.id
WHERE m.destination = %s ORDER BY m.created_at DESC, m.id DESC LIMIT 1
"""

Counters = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@attrs.define
class Listeners:
    """Clients of the public and the admin listener, and the statements the API sent."""

    public: httpx.AsyncClient
    admin: httpx.AsyncClient
    database_url: str
    statements: StatementLog

    async def post(
        self, path: str, body: Any = None, *, token: str | None = None
    ) -> httpx.Response:
        """POST ``body`` as JSON to the public listener."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return await self.public.post(path, json=body, headers=headers)

    async def counters(self) -> Counters:
        """Every counter sample the admin listener's ``/metrics`` shows now."""
        scraped = await self.admin.get("/metrics")
        assert 200 == scraped.status_code
        return {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(scraped.text)
            if family.type == "counter"
            for sample in family.samples
            if sample.name.endswith("_total")
        }

    async def code_for(self, destination: str) -> str:
        """The secret of the newest live message to ``destination``, opened as the worker would."""
        async with await psycopg.AsyncConnection.connect(self.database_url) as conn:
            cursor = await conn.execute(NEWEST_SEALED, (destination,))
            row = await cursor.fetchone()
        assert row is not None, f"no sealed message to {destination}"
        message_id, purpose, sealed = row
        return SEALER.open(message_id=message_id, purpose=Purpose(purpose), envelope=sealed)

    async def signed_up(self, identifier: str) -> str:
        """Sign up, confirm with the sealed code, sign in; return the bearer token."""
        account = {"identifier": identifier, "password": PASSWORD}
        assert 201 == (await self.post("/sign-ups", account)).status_code
        code = await self.code_for(identifier)
        confirmed = await self.post(
            "/sign-ups/confirmations", {"identifier": identifier, "code": code}
        )
        assert 204 == confirmed.status_code, confirmed.text
        session = await self.post("/sessions", account)
        assert 201 == session.status_code, session.text
        return str(session.json()["token"])


@asynccontextmanager
async def two_listeners(database_url: str) -> AsyncIterator[Listeners]:
    """Serve both apps in this event loop; restore the logging configuration afterwards."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    configure_logging("json", "info", stream=io.StringIO())
    log = StatementLog()
    pool = await open_api_pool(database_url, log)
    registry = new_registry(process_metrics=False)
    try:
        parts: dict[str, Any] = {
            "pool": pool,
            "sealer": SEALER,
            "hasher": Argon2idHasher(Argon2Parameters.cheapest()),
            "clock": FixedClock(datetime.now(UTC).replace(microsecond=0)),
            "ids": Uuid7Ids(),
            "secret_source": SystemSecrets(),
            "telemetry": build_telemetry(registry),
        }
        services = build_identity_services(identity=ApiSettings().identity, **parts)
        operator = build_operator_services(challenges=ChallengePolicy(), **parts)
        public_app = create_app(services)
        admin_app = create_admin_app(services, operator=operator, registry=registry)
        async with (
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=public_app), base_url="http://public"
            ) as public,
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=admin_app), base_url="http://admin"
            ) as admin,
        ):
            yield Listeners(public=public, admin=admin, database_url=database_url, statements=log)
    finally:
        await pool.close()
        structlog.reset_defaults()
        root.handlers[:] = handlers
        root.setLevel(level)
