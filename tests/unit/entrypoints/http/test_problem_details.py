"""The HTTP entry point maps every failure to a problem, never leaking exception text."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from outbox.application.errors import StoreUnavailable
from outbox.entrypoints.http.app import create_app
from tests.unit.application.identity.world import World

SIGN_UP = {"identifier": "alice@example.com"}
CONFIRMATION = {"identifier": "alice@example.com", "code": "123456"}


@pytest.fixture
def world() -> World:
    return World()


@pytest.fixture
async def client(world: World) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_app(world.services()))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield client


async def test_an_unexpected_error_is_a_bare_500_logged_by_name(
    world: World, client: httpx.AsyncClient
) -> None:
    world.db.faults.errors["find_account"] = RuntimeError("password=hunter2 leaked")

    response = await client.post("/sign-ups", json=SIGN_UP)

    assert 500 == response.status_code
    assert "application/problem+json" == response.headers["content-type"]
    assert "urn:outbox:problem:internal-error" == response.json()["type"]
    assert "hunter2" not in response.text
    [event] = world.telemetry.named("http.unexpected_error")
    assert "RuntimeError" == event.fields["error"]
    assert "hunter2" not in str(event.fields)


async def test_a_transient_database_failure_is_a_503_with_retry_after(
    world: World, client: httpx.AsyncClient
) -> None:
    world.db.faults.errors["begin"] = StoreUnavailable("08006")

    response = await client.post("/sign-ups", json=SIGN_UP)

    assert 503 == response.status_code
    assert "5" == response.headers["retry-after"]
    assert "urn:outbox:problem:service-unavailable" == response.json()["type"]


async def test_a_rate_limit_is_a_429_with_whole_seconds_to_wait(
    world: World, client: httpx.AsyncClient
) -> None:
    for _ in range(world.policy.per_client.limit):
        await client.post("/magic-links", json={"email": "x@example.com"})

    response = await client.post("/magic-links", json={"email": "x@example.com"})

    assert 429 == response.status_code
    assert "60" == response.headers["retry-after"]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        # The password is chosen at the confirmation; a sign-up that still sends one is told.
        ("/sign-ups", {**SIGN_UP, "password": "correct horse battery"}, "password"),
        ("/sign-ups", {"identifier": "not-an-address"}, "identifier"),
        ("/sign-ups", {**SIGN_UP, "extra": 1}, "extra"),
        ("/sign-ups/confirmations", CONFIRMATION, "password"),
        ("/sign-ups/confirmations", {**CONFIRMATION, "password": "short"}, "password"),
    ],
)
async def test_validation_errors_name_the_field(
    client: httpx.AsyncClient, path: str, body: dict[str, object], field: str
) -> None:
    response = await client.post(path, json=body)

    assert 400 == response.status_code
    problem = response.json()
    assert "urn:outbox:problem:validation-error" == problem["type"]
    assert field in {error["field"] for error in problem["errors"]}


async def test_unknown_routes_and_methods_are_problems_too(client: httpx.AsyncClient) -> None:
    missing = await client.get("/nowhere")
    wrong_method = await client.get("/sign-ups")

    assert ("urn:outbox:problem:not-found", 404) == (missing.json()["type"], missing.status_code)
    assert "urn:outbox:problem:method-not-allowed" == wrong_method.json()["type"]
