"""Hostile request shapes against the public listener ("HTTP hygiene").

JSON bodies only, small ones, shallow ones; token responses are never cached; a database
that cannot hand out a connection gives a fast 503, not a hung request.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import psycopg
import pytest
from psycopg import conninfo, sql

from tests.integration.identity.api import PASSWORD
from tests.security.http_app import App, serving
from tests.security.served import running_serve, serve_environment, wait_until_ready

pytestmark = pytest.mark.integration

MAX_BODY = 16 * 1024
PROBLEM = "application/problem+json"


@pytest.fixture
async def app(database_url: str) -> AsyncIterator[App]:
    """Both listeners over a fresh database."""
    async with serving(database_url) as running:
        yield running


async def _post_routes(app: App) -> list[str]:
    schema = (await app.client.get("/schema/openapi.json")).json()
    paths = sorted(path for path, item in schema["paths"].items() if "post" in item)
    return [re.sub(r"\{[^}]+\}", str(uuid.UUID(int=1)), path) for path in paths]


def _nested(depth: int) -> bytes:
    return b'{"identifier": ' + b"[" * depth + b"]" * depth + b"}"


def _type(response: httpx.Response) -> str:
    assert PROBLEM == response.headers["content-type"], response.text
    return str(json.loads(response.content)["type"])


async def test_deeply_nested_json_is_a_400_on_every_route(app: App) -> None:
    routes = await _post_routes(app)
    answers = {
        path: await app.client.post(
            path, content=_nested(1000), headers={"content-type": "application/json"}
        )
        for path in routes
    }

    assert len(routes) >= 10
    assert dict.fromkeys(routes, 400) == {p: r.status_code for p, r in answers.items()}
    assert {"urn:outbox:problem:validation-error"} == {_type(r) for r in answers.values()}


async def test_a_little_nesting_is_still_parsed(app: App) -> None:
    response = await app.post("/password-recoveries", {"identifier": "a@example.com", "x": [[[]]]})

    assert 400 == response.status_code
    assert "x" in response.text  # refused as an unknown field, after parsing


async def test_a_body_over_16_kib_is_a_413_before_it_is_parsed(app: App) -> None:
    big = json.dumps({"identifier": "a" * MAX_BODY + "@example.com"}).encode()

    declared = await app.client.post(
        "/password-recoveries", content=big, headers={"content-type": "application/json"}
    )

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(big), 1024):
            yield big[start : start + 1024]

    streamed = await app.client.post(
        "/password-recoveries", content=chunks(), headers={"content-type": "application/json"}
    )

    assert "content-length" not in streamed.request.headers
    assert (413, 413) == (declared.status_code, streamed.status_code)
    assert "urn:outbox:problem:payload-too-large" == _type(declared)


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", None],
)
async def test_a_body_that_is_not_declared_json_is_a_415(
    app: App, content_type: str | None
) -> None:
    body = json.dumps({"identifier": "a@example.com"}).encode()
    headers = {"content-type": content_type} if content_type else {}

    response = await app.client.post("/password-recoveries", content=body, headers=headers)

    assert 415 == response.status_code
    assert "urn:outbox:problem:unsupported-media-type" == _type(response)


async def test_json_with_a_charset_is_accepted(app: App) -> None:
    body = json.dumps({"identifier": "a@example.com"}).encode()
    response = await app.client.post(
        "/password-recoveries",
        content=body,
        headers={"content-type": "Application/JSON; charset=utf-8"},
    )

    assert 201 == response.status_code


async def test_every_response_carrying_a_token_is_not_stored(app: App) -> None:
    token = await app.signed_up("alice@example.com")
    session = await app.post("/sessions", {"identifier": "alice@example.com", "password": PASSWORD})
    assert 201 == (await app.post("/step-ups", token=token)).status_code
    code = await app.code_for("alice@example.com")
    elevation = await app.post("/step-ups/confirmations", {"code": code}, token=token)
    await app.post("/magic-links", {"email": "alice@example.com"})
    link_token = await app.code_for("alice@example.com")
    redeemed = await app.post("/magic-links/redemptions", {"token": link_token})

    for response in (session, elevation, redeemed):
        assert 201 == response.status_code, response.text
        assert "no-store" == response.headers["cache-control"]


async def test_a_database_that_hands_out_no_connection_is_a_fast_503(
    database_url: str, tmp_path: Path
) -> None:
    name = conninfo.conninfo_to_dict(database_url)["dbname"]
    maintenance = conninfo.make_conninfo(database_url, dbname="postgres")
    environment = serve_environment(database_url, tmp_path, OUTBOX_DB_POOL_MAX="1")
    with running_serve(environment) as served:
        await wait_until_ready(served.public)
        with psycopg.connect(maintenance, autocommit=True) as admin:
            admin.execute(
                sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS false").format(sql.Identifier(name))
            )
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )
            try:
                async with httpx.AsyncClient(base_url=served.public, timeout=60) as client:
                    # Three in a row: the first may meet the killed connection, the later ones
                    # wait for a new one that cannot come. 30 s each before the fix.
                    async with asyncio.timeout(20):
                        answers = [
                            await client.post(
                                "/password-recoveries", json={"identifier": "a@example.com"}
                            )
                            for _ in range(3)
                        ]
            finally:
                admin.execute(
                    sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS true").format(sql.Identifier(name))
                )

    assert [503, 503, 503] == [answer.status_code for answer in answers]
    assert all(answer.headers["retry-after"].isdigit() for answer in answers)


async def test_the_admin_listener_loads_no_third_party_script(app: App) -> None:
    """The attack (issue 28, low): /schema on the admin listener, the origin of the console
    and the staff routes, loaded Swagger UI from a CDN without integrity, so a compromised
    CDN script ran with a staff member's session. The admin listener serves the schema as
    JSON only; the public one keeps its viewer."""
    pages = [await app.admin.get(path) for path in ("/schema", "/schema/swagger")]
    schema = await app.admin.get("/schema/openapi.json")

    for page in pages:
        assert "<script" not in page.text
    assert 200 == schema.status_code
    assert "openapi" in schema.json()
