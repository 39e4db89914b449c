"""Both HTTP listeners (identity, staff routes) over a real database, with real telemetry.

Unlike the identity suite's harness, the telemetry here is the production adapter: every
event becomes a structlog JSON line in ``lines``, redaction included, so a test can scan
exactly what an operator's log pipeline would receive. Time is a FixedClock, so known and
unknown identifiers can be compared byte for byte. The pool records the statements the API
sends (through its cursors, parameters left out) while ``statements.recording`` is set.
"""

from __future__ import annotations

import io
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import httpx
import psycopg
import structlog
from prometheus_client.parser import text_string_to_metric_families

from outbox.adapters.crypto.hashing import Argon2idHasher, Argon2Parameters
from outbox.adapters.system.ids import Uuid7Ids
from outbox.adapters.system.secrets import SystemSecrets
from outbox.domain.identity.challenges import ChallengePolicy
from outbox.domain.purposes import Purpose
from outbox.entrypoints.bootstrap.api import build_identity_services
from outbox.entrypoints.bootstrap.operator import build_operator_services
from outbox.entrypoints.http.app import create_admin_app, create_app
from outbox.entrypoints.observability import build_telemetry, configure_logging, new_registry
from tests.fakes.clock import FixedClock
from tests.integration.identity.api import (
    PASSWORD,
    SEALER,
    ApiSettings,
    StatementLog,
    open_api_pool,
)

Counters = dict[tuple[str, tuple[tuple[str, str], ...]], float]
NEWEST_SEALED = """
SELECT m.id, m.purpose, e.sealed FROM outbox.messages AS m
JOIN outbox.envelopes AS e ON e.message_id = m.id
WHERE m.destination = %s ORDER BY m.created_at DESC, m.id DESC LIMIT 1
"""


class App:
    """A client of the app, the database behind it, and the log lines it wrote."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        admin: httpx.AsyncClient,
        database_url: str,
        log: io.StringIO,
        statements: StatementLog,
    ) -> None:
        self.client = client  # the public listener
        self.admin = admin  # the admin listener: metrics and the staff routes
        self.database_url = database_url
        self.statements = statements  # what the API's pool sent, while recording
        self._log = log

    @property
    def lines(self) -> list[str]:
        """Every log line so far."""
        return self._log.getvalue().splitlines()

    async def post(
        self, path: str, body: Any = None, *, token: str | None = None, **headers: str
    ) -> httpx.Response:
        """POST ``body`` as JSON, with a bearer token and extra headers if given."""
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return await self.client.post(path, json=body, headers=headers)

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

    async def elevated(self, token: str, identifier: str, *, staff: bool = False) -> str:
        """Step the session of ``token`` up with the code sent to ``identifier``, at the
        public listener (or, ``staff``, at the admin one, whose sessions act for staff)."""
        client = self.admin if staff else self.client
        bearer = {"Authorization": f"Bearer {token}"}
        assert 201 == (await client.post("/step-ups", headers=bearer)).status_code
        code = await self.code_for(identifier)
        confirmed = await client.post(
            "/step-ups/confirmations", json={"code": code}, headers=bearer
        )
        assert 201 == confirmed.status_code, confirmed.text
        return str(confirmed.json()["elevationToken"])

    async def staff_elevated(self, identifier: str) -> tuple[str, str]:
        """Sign a staff member in at the admin listener and step up there: the bearer token
        and the elevation token the staff routes take."""
        account = {"identifier": identifier, "password": PASSWORD}
        session = await self.admin.post("/sessions", json=account)
        assert 201 == session.status_code, session.text
        token = str(session.json()["token"])
        return token, await self.elevated(token, identifier, staff=True)

    async def signed_up(self, identifier: str) -> str:
        """Sign up, confirm with the sealed code, sign in; return the bearer token."""
        account = {"identifier": identifier, "password": PASSWORD}
        assert 201 == (await self.post("/sign-ups", {"identifier": identifier})).status_code
        code = await self.code_for(identifier)
        confirmed = await self.post("/sign-ups/confirmations", {**account, "code": code})
        assert 204 == confirmed.status_code, confirmed.text
        session = await self.post("/sessions", account)
        assert 201 == session.status_code, session.text
        return str(session.json()["token"])


@asynccontextmanager
async def serving(database_url: str) -> AsyncIterator[App]:
    """Serve the app in this event loop; restore the logging configuration afterwards."""
    out = io.StringIO()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    configure_logging("json", "debug", stream=out)
    statements = StatementLog()
    pool = await open_api_pool(database_url, statements)
    staff_pool = await open_api_pool(database_url, statements, role="staff_service")
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
        staff_parts = parts | {"pool": staff_pool}
        staff_services = build_identity_services(
            identity=ApiSettings().identity, staff=True, **staff_parts
        )
        operator = build_operator_services(challenges=ChallengePolicy(), **staff_parts)
        admin_app = create_admin_app(staff_services, operator=operator, registry=registry)
        async with (
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=create_app(services)),
                base_url="http://testserver",
            ) as client,
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=admin_app), base_url="http://admin"
            ) as admin,
        ):
            yield App(client, admin, database_url, out, statements)
    finally:
        await pool.close()
        await staff_pool.close()
        structlog.reset_defaults()
        root.handlers[:] = handlers
        root.setLevel(level)
