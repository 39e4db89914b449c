"""Known and unknown identifiers look alike on both listeners ("Two listeners").

For every route that takes an identifier an outsider may probe — password recovery, magic
links, sign-up, sign-in and adding a sign-in method — a request about an account that
exists and one about an address nobody holds are compared on everything an outsider or a
metrics scraper sees: status, body and headers on the public listener, and every counter
the admin listener's ``/metrics`` shows (one scrape before, one after each request).

The server-side statement sequence is compared too, captured through the API pool's
cursors (every statement the API sends, in order, parameters left out): the shared test
server cannot give each test its own statement log, and the cursor sees exactly what the
API's connections send, without timing noise.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest

from tests.security.http_app import App, Counters, serving

pytestmark = pytest.mark.integration

KNOWN = "alice@example.com"
UNKNOWN = "nobody@example.com"
PROBER = "prober@example.com"  # a second account, probing as itself

Probe = Callable[[App, str, dict[str, str]], Awaitable[httpx.Response]]


async def _recovery(app: App, address: str, _caller: dict[str, str]) -> httpx.Response:
    return await app.post("/password-recoveries", {"identifier": address})


async def _magic_link(app: App, address: str, _caller: dict[str, str]) -> httpx.Response:
    return await app.post("/magic-links", {"email": address})


async def _sign_up(app: App, address: str, _caller: dict[str, str]) -> httpx.Response:
    return await app.post("/sign-ups", {"identifier": address})


async def _sign_in(app: App, address: str, _caller: dict[str, str]) -> httpx.Response:
    return await app.post("/sessions", {"identifier": address, "password": "not the password"})


async def _add_method(app: App, address: str, caller: dict[str, str]) -> httpx.Response:
    return await app.post("/sign-in-methods", {"identifier": address}, **caller)


PROBES: dict[str, Probe] = {
    "password recovery": _recovery,
    "magic link": _magic_link,
    "sign-up": _sign_up,
    "sign-in": _sign_in,
    "add sign-in method": _add_method,
}
# Routes whose two answers also send the very same statements. Sign-up and adding a method
# write rows only for an address nobody holds (docs/identity.md, threat model).
SAME_STATEMENTS = {"password recovery", "magic link", "sign-in"}


@pytest.fixture
async def app(database_url: str) -> AsyncIterator[App]:
    """Both listeners; KNOWN is a verified account, and a second account probes as itself."""
    async with serving(database_url) as running:
        await running.signed_up(KNOWN)
        yield running


def _delta(before: Counters, after: Counters) -> Counters:
    return {
        key: value - before.get(key, 0.0)
        for key, value in after.items()
        if value != before.get(key, 0.0)
    }


async def _observe(
    app: App, probe: Probe, address: str, caller: dict[str, str]
) -> tuple[httpx.Response, Counters, list[str]]:
    before = await app.counters()
    app.statements.statements.clear()
    app.statements.recording = True
    try:
        response = await probe(app, address, caller)
    finally:
        app.statements.recording = False
    return response, _delta(before, await app.counters()), list(app.statements.statements)


def _wire(response: httpx.Response) -> tuple[int, list[tuple[str, str]], bytes]:
    return response.status_code, sorted(response.headers.items()), response.content


@pytest.mark.parametrize("route", list(PROBES))
async def test_known_and_unknown_look_alike_on_both_listeners(app: App, route: str) -> None:
    probe = PROBES[route]
    token = await app.signed_up(PROBER)
    # Adding a method needs a fresh step-up; both requests carry the same one.
    caller = {
        "Authorization": f"Bearer {token}",
        "Elevation-Token": await app.elevated(token, PROBER),
    }

    known, known_counters, known_statements = await _observe(app, probe, KNOWN, caller)
    unknown, unknown_counters, unknown_statements = await _observe(app, probe, UNKNOWN, caller)

    assert known.status_code < 500, known.text
    assert _wire(known) == _wire(unknown)
    assert known_counters == unknown_counters
    assert 1 == sum(1 for name, _ in known_counters if name == "outbox_log_events_total")
    if route in SAME_STATEMENTS:
        assert known_statements == unknown_statements


async def test_the_public_listener_has_no_metrics_to_scrape(app: App) -> None:
    assert 404 == (await app.client.get("/metrics")).status_code
