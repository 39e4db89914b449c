"""Schemathesis against the staff routes as a signed-in, stepped-up staff member: no 5xx and
no undocumented status, for valid and invalid inputs (the harness is the identity API's)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.generation.modes import GenerationMode

from outbox.adapters.crypto.hashing import Argon2idHasher, Argon2Parameters
from outbox.adapters.system.clock import SystemClock
from outbox.adapters.system.ids import Uuid7Ids
from outbox.adapters.system.secrets import SystemSecrets
from outbox.domain.identity.challenges import ChallengePolicy
from outbox.domain.purposes import Purpose
from outbox.entrypoints.bootstrap.api import build_identity_services
from outbox.entrypoints.bootstrap.operator import build_operator_services
from outbox.entrypoints.http.app import create_admin_app, create_app
from outbox.entrypoints.observability import new_registry
from tests.integration.identity.api import (
    PASSWORD,
    SEALER,
    ApiSettings,
    StatementLog,
    open_api_pool,
)
from tests.integration.identity.test_openapi_fuzzing import (
    CHECKS,
    Background,
    Served,
    _httpx_kwargs,
)

pytestmark = pytest.mark.integration

EXAMPLES = 25
# Each staff prefix and how many operations it has.
STAFF_PREFIXES = {
    "/platform-admin/security-outbox": 4,
    "/platform-admin/tenant-events": 9,
    "/platform-admin/suppressions": 3,
    "/platform-admin/consumers": 5,
    "/platform-admin/workers": 1,
}


class ServedWithStaff(Served):
    """The app with the staff routes; the fuzz account is staff and stepped up."""

    async def start(self) -> None:
        self.pool = await open_api_pool(self.database_url, StatementLog())
        self.staff_pool = await open_api_pool(
            self.database_url, StatementLog(), role="staff_service"
        )
        parts: dict[str, Any] = {
            "pool": self.pool,
            "sealer": SEALER,
            "hasher": Argon2idHasher(Argon2Parameters.cheapest()),
            "clock": SystemClock(),
            "ids": Uuid7Ids(),
            "secret_source": SystemSecrets(),
            "telemetry": self.telemetry,
        }
        services = build_identity_services(identity=ApiSettings().identity, **parts)
        staff_parts = parts | {"pool": self.staff_pool}
        staff_services = build_identity_services(
            identity=ApiSettings().identity, staff=True, **staff_parts
        )
        operator = build_operator_services(challenges=ChallengePolicy(), **staff_parts)
        # Staff sign up on the public listener, then sign in and step up on the admin one,
        # whose sessions alone act for staff.
        self.client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_app(services)), base_url="http://testserver"
        )
        self.admin = httpx.AsyncClient(
            transport=httpx.ASGITransport(
                app=create_admin_app(staff_services, operator=operator, registry=new_registry())
            ),
            base_url="http://testserver",
        )
        self.schema = (await self.admin.get("/schema/openapi.json")).json()
        await self._signed_in()
        async with await psycopg.AsyncConnection.connect(self.database_url) as conn:
            await conn.execute("SELECT outbox.grant_staff('fuzz@example.com')")
            await conn.commit()
        account = {"identifier": "fuzz@example.com", "password": PASSWORD}
        self.token = str((await self.admin.post("/sessions", json=account)).json()["token"])
        self.elevation = await self._stepped_up()

    async def _stepped_up(self) -> str:
        headers = {"Authorization": f"Bearer {self.token}"}
        assert 201 == (await self.admin.post("/step-ups", headers=headers)).status_code
        async with await psycopg.AsyncConnection.connect(self.database_url) as conn:
            cursor = await conn.execute(
                "SELECT m.id, e.sealed FROM outbox.messages m"
                " JOIN outbox.envelopes e ON e.message_id = m.id WHERE m.purpose = 'step_up'"
            )
            [(message_id, sealed)] = await cursor.fetchall()
        code = SEALER.open(message_id=message_id, purpose=Purpose.STEP_UP, envelope=sealed)
        response = await self.admin.post(
            "/step-ups/confirmations", json={"code": code}, headers=headers
        )
        return str(response.json()["elevationToken"])

    async def send(self, kwargs: dict[str, Any]) -> httpx.Response:
        return await self.admin.request(**kwargs)

    async def stop(self) -> None:
        await self.admin.aclose()
        await self.staff_pool.close()
        await super().stop()


@pytest.fixture
def served(database_url: str) -> Iterator[tuple[Background, ServedWithStaff]]:
    background = Background()
    served = ServedWithStaff(database_url)
    background.run(served.start())
    try:
        yield background, served
    finally:
        background.run(served.stop())
        background.stop()


@pytest.mark.parametrize("prefix", list(STAFF_PREFIXES))
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_the_staff_routes_never_fail_with_a_server_error(
    served: tuple[Background, ServedWithStaff], mode: GenerationMode, prefix: str
) -> None:
    background, app = served
    operations = [
        result.ok()
        for result in schemathesis.openapi.from_dict(app.schema).get_all_operations()
        if result.ok().path.startswith(prefix)
    ]
    assert STAFF_PREFIXES[prefix] == len(operations)

    for operation in operations:

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
        def check(case: Any) -> None:
            headers = {"Authorization": f"Bearer {app.token}"}
            if "Elevation-Token" not in (case.headers or {}):
                headers["Elevation-Token"] = app.elevation
            kwargs = case.as_transport_kwargs(base_url="http://testserver", headers=headers)
            response = background.run(app.send(_httpx_kwargs(kwargs)))
            case.validate_response(response, checks=CHECKS, transport_kwargs=kwargs)

        check()
    assert [] == [e for e in app.telemetry.events if e.name == "http.unexpected_error"]
