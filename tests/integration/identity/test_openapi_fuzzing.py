"""Schemathesis against the schema the app serves: no 5xx, no undocumented status.

The app, its pool and an HTTP client live on one background event loop; each generated
case is sent there through httpx's ASGI transport and checked against the schema.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import httpx
import psycopg
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from outbox.adapters.crypto.hashing import Argon2idHasher, Argon2Parameters
from outbox.adapters.system.clock import SystemClock
from outbox.adapters.system.ids import Uuid7Ids
from outbox.adapters.system.secrets import SystemSecrets
from outbox.domain.purposes import Purpose
from outbox.entrypoints.bootstrap.api import build_identity_services
from outbox.entrypoints.http.app import create_app
from tests.fakes.telemetry import RecordingTelemetry
from tests.integration.identity.api import (
    PASSWORD,
    SEALER,
    ApiSettings,
    StatementLog,
    open_api_pool,
)

pytestmark = pytest.mark.integration

_T = TypeVar("_T")
EXAMPLES = 20  # per operation and mode: the whole run stays well under a minute
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


class Background:
    """An event loop on its own thread, where the app and its pool live."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        """Run ``coroutine`` on the loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=60)

    def stop(self) -> None:
        """Stop the loop and join the thread."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


class Served:
    """The app over a real database, with a signed-in caller's token."""

    def __init__(self, database_url: str) -> None:
        self.database_url = database_url
        self.telemetry = RecordingTelemetry()

    async def start(self) -> None:
        self.pool = await open_api_pool(self.database_url, StatementLog())
        services = build_identity_services(
            pool=self.pool,
            sealer=SEALER,
            hasher=Argon2idHasher(Argon2Parameters.cheapest()),
            clock=SystemClock(),
            ids=Uuid7Ids(),
            secret_source=SystemSecrets(),
            telemetry=self.telemetry,
            identity=ApiSettings().identity,
        )
        self.client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_app(services)), base_url="http://testserver"
        )
        self.schema = (await self.client.get("/schema/openapi.json")).json()
        self.token = await self._signed_in()

    async def _signed_in(self) -> str:
        """A verified account, confirmed with the code read from its sealed message."""
        account = {"identifier": "fuzz@example.com", "password": PASSWORD}
        sign_up = {"identifier": account["identifier"]}
        assert 201 == (await self.client.post("/sign-ups", json=sign_up)).status_code
        async with await psycopg.AsyncConnection.connect(self.database_url) as conn:
            cursor = await conn.execute(
                "SELECT m.id, e.sealed FROM outbox.messages m"
                " JOIN outbox.envelopes e ON e.message_id = m.id"
            )
            [(message_id, sealed)] = await cursor.fetchall()
        code = SEALER.open(message_id=message_id, purpose=Purpose.SIGN_UP, envelope=sealed)
        confirmation = {**account, "code": code}
        assert (
            204
            == (await self.client.post("/sign-ups/confirmations", json=confirmation)).status_code
        )
        session = await self.client.post("/sessions", json=account)
        return str(session.json()["token"])

    async def send(self, kwargs: dict[str, Any]) -> httpx.Response:
        return await self.client.request(**kwargs)

    async def stop(self) -> None:
        await self.client.aclose()
        await self.pool.close()


@pytest.fixture
def served(database_url: str) -> Iterator[tuple[Background, Served]]:
    background = Background()
    served = Served(database_url)
    background.run(served.start())
    try:
        yield background, served
    finally:
        background.run(served.stop())
        background.stop()


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_no_server_error_and_no_undocumented_status(
    served: tuple[Background, Served], mode: GenerationMode
) -> None:
    """Every operation, valid and invalid inputs, a bounded number of examples each."""
    background, app = served
    headers = {"Authorization": f"Bearer {app.token}"}
    operations = [
        result.ok() for result in schemathesis.openapi.from_dict(app.schema).get_all_operations()
    ]
    assert len(operations) >= 17

    for operation in operations:
        if mode is GenerationMode.NEGATIVE and not (operation.body or operation.path_parameters):
            continue  # nothing to make invalid (GET /healthz, POST /step-ups)

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
        def check(case: Any) -> None:
            kwargs = case.as_transport_kwargs(base_url="http://testserver", headers=headers)
            response = background.run(app.send(_httpx_kwargs(kwargs)))
            case.validate_response(response, checks=CHECKS, transport_kwargs=kwargs)

        check()
    assert [] == [e for e in app.telemetry.events if e.name == "http.unexpected_error"]


def _httpx_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The requests-style arguments Schemathesis serializes, as httpx takes them."""
    translated = {
        k: kwargs[k] for k in ("method", "url", "headers", "params", "json") if k in kwargs
    }
    data = kwargs.get("data")
    if isinstance(data, bytes | str):
        translated["content"] = data
    elif data is not None:
        translated["data"] = data
    if kwargs.get("cookies"):
        translated["cookies"] = kwargs["cookies"]
    return translated


def test_the_checks_catch_a_server_error(served: tuple[Background, Served]) -> None:
    """The harness can fail: a use case that blows up is reported as a 5xx."""
    background, app = served
    operation = schemathesis.openapi.from_dict(app.schema)["/magic-links"]["POST"]
    case = operation.Case(body={"email": "someone@example.com"}, media_type="application/json")
    kwargs = case.as_transport_kwargs(base_url="http://testserver")
    background.run(app.pool.close())

    response = background.run(app.send(_httpx_kwargs(kwargs)))

    with pytest.raises(FailureGroup, match="Server error"):
        case.validate_response(response, checks=CHECKS, transport_kwargs=kwargs)
