"""What each listener of ``outboxctl serve`` answers, tried from outside over TCP.

The public port serves the identity routes and the probes only; ``/metrics`` and the staff
routes are on the admin listener. The client address is the TCP peer unless the peer is a
trusted proxy, and a client that sends its request too slowly is disconnected.
"""

from __future__ import annotations

import asyncio
import socket
from email.message import Message
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.security.served import running_serve, serve_environment, wait_until_ready

pytestmark = pytest.mark.integration

STAFF_BACKLOG = "/platform-admin/security-outbox/backlog"


def strict_media_type(header: str) -> tuple[str, dict[str, str]]:
    """The media type and parameters of a Content-Type, refusing a repeated parameter.

    Prometheus 3 refuses a scrape whose Content-Type repeats ``charset``; the standard
    library's parser would silently keep one of them, so repeats are counted first.
    """
    parsed = Message()
    parsed["content-type"] = header
    params = parsed.get_params()
    assert params is not None, header
    (media_type, _), *rest = params
    names = [name.lower() for name, _ in rest]
    assert len(names) == len(set(names)), f"repeated parameter in {header!r}"
    return media_type, {name.lower(): value for name, value in rest}


def test_the_strict_parser_refuses_a_repeated_charset() -> None:
    with pytest.raises(AssertionError, match="repeated parameter"):
        strict_media_type("text/plain; version=1.0.0; charset=utf-8; charset=utf-8")


async def test_the_public_port_serves_no_metrics_and_no_staff_routes(
    database_url: str, tmp_path: Path
) -> None:
    with running_serve(serve_environment(database_url, tmp_path)) as served:
        await wait_until_ready(served.public)
        async with httpx.AsyncClient(base_url=served.public, timeout=10) as public:
            metrics = await public.get("/metrics")
            staff = await public.get(STAFF_BACKLOG)
            schema = (await public.get("/schema/openapi.json")).json()
        async with httpx.AsyncClient(base_url=served.admin, timeout=10) as admin:
            scraped = await admin.get("/metrics")
            staff_on_admin = await admin.get(STAFF_BACKLOG)
            sign_up_on_admin = await admin.post("/sign-ups", json={})

    assert 404 == metrics.status_code
    assert 404 == staff.status_code
    assert not [path for path in schema["paths"] if "metrics" in path or "admin" in path]
    assert 200 == scraped.status_code
    assert 401 == staff_on_admin.status_code
    assert 404 == sign_up_on_admin.status_code


async def test_the_admin_metrics_content_type_is_one_a_prometheus_server_accepts(
    database_url: str, tmp_path: Path
) -> None:
    with running_serve(serve_environment(database_url, tmp_path)) as served:
        await wait_until_ready(served.public)
        async with httpx.AsyncClient(base_url=served.admin, timeout=10) as admin:
            scraped = await admin.get("/metrics")

    media_type, params = strict_media_type(scraped.headers["content-type"])
    assert "text/plain" == media_type
    assert {"version", "charset"} == set(params)
    assert "utf-8" == params["charset"].lower()
    families = {family.name for family in text_string_to_metric_families(scraped.text)}
    assert "outbox_log_events" in families


async def test_a_rotating_forwarded_for_from_loopback_does_not_escape_the_client_limit(
    database_url: str, tmp_path: Path
) -> None:
    environment = serve_environment(
        database_url,
        tmp_path,
        OUTBOX_RATE_LIMIT_CLIENT="3",
        OUTBOX_RATE_LIMIT_CLIENT_WINDOW_SECONDS="600",
    )
    with running_serve(environment) as served:
        await wait_until_ready(served.public)
        async with httpx.AsyncClient(base_url=served.public, timeout=10) as public:
            statuses = [
                (
                    await public.post(
                        "/password-recoveries",
                        json={"identifier": f"someone{n}@example.com"},
                        headers={"X-Forwarded-For": f"203.0.113.{n}"},
                    )
                ).status_code
                for n in range(6)
            ]

    assert [201, 201, 201, 429, 429, 429] == statuses


async def test_a_trusted_proxy_names_the_client(database_url: str, tmp_path: Path) -> None:
    environment = serve_environment(
        database_url,
        tmp_path,
        OUTBOX_RATE_LIMIT_CLIENT="1",
        OUTBOX_RATE_LIMIT_CLIENT_WINDOW_SECONDS="600",
        OUTBOX_TRUSTED_PROXIES="127.0.0.1/32, ::1",
    )
    with running_serve(environment) as served:
        await wait_until_ready(served.public)
        async with httpx.AsyncClient(base_url=served.public, timeout=10) as public:

            async def ask(client: str) -> int:
                response = await public.post(
                    "/password-recoveries",
                    json={"identifier": "someone@example.com"},
                    headers={"X-Forwarded-For": client},
                )
                return response.status_code

            statuses = [
                await ask("203.0.113.1"),
                await ask("203.0.113.2"),
                await ask("203.0.113.1"),
            ]

    assert [201, 201, 429] == statuses


async def test_addresses_of_one_ipv6_64_share_one_client_limit(
    database_url: str, tmp_path: Path
) -> None:
    """The attack (issue 28, finding 4): a guesser holding one IPv6 /64 (the smallest block a
    subscriber gets) rotated through 80 of its addresses and had every sign-in evaluated."""
    environment = serve_environment(
        database_url,
        tmp_path,
        OUTBOX_RATE_LIMIT_CLIENT="3",
        OUTBOX_RATE_LIMIT_CLIENT_WINDOW_SECONDS="600",
        OUTBOX_TRUSTED_PROXIES="127.0.0.1/32, ::1",
    )
    with running_serve(environment) as served:
        await wait_until_ready(served.public)
        async with httpx.AsyncClient(base_url=served.public, timeout=10) as public:
            guesses = iter(range(100))

            async def guess(client: str) -> int:
                # Another account each time: only the client limit may refuse.
                response = await public.post(
                    "/sessions",
                    json={"identifier": f"someone{next(guesses)}@example.com", "password": "x"},
                    headers={"X-Forwarded-For": client},
                )
                return response.status_code

            rotating = [await guess(f"2001:db8:1:2::{n:x}") for n in range(1, 7)]
            elsewhere = await guess("2001:db8:1:3::1")
            mapped = [
                await guess(client)
                for client in ("198.51.100.7", "198.51.100.7", "::ffff:198.51.100.7") * 2
            ]

    assert [401, 401, 401, 429, 429, 429] == rotating
    assert 401 == elsewhere
    assert [401, 401, 401, 429, 429, 429] == mapped  # an IPv4 client and its mapped form


async def test_a_client_that_sends_its_headers_too_slowly_is_disconnected(
    database_url: str, tmp_path: Path
) -> None:
    environment = serve_environment(database_url, tmp_path, OUTBOX_HTTP_REQUEST_TIMEOUT_SECONDS="1")
    with running_serve(environment) as served:
        await wait_until_ready(served.public)

        def disconnected_while_trickling() -> bool:
            with socket.create_connection(("127.0.0.1", served.public_port), timeout=5) as conn:
                conn.sendall(b"POST /password-recoveries HTTP/1.1\r\nHost: x\r\n")
                conn.settimeout(0.5)
                # A byte now and then resets an idle timer, never a request deadline.
                for _ in range(12):
                    try:
                        conn.sendall(b"X")
                        conn.recv(1024)  # the server closed (b"") or answered: either ends it
                    except TimeoutError:
                        continue
                    except OSError:
                        pass  # reset by the server
                    return True
                return False

        disconnected = await asyncio.to_thread(disconnected_while_trickling)

    assert disconnected
