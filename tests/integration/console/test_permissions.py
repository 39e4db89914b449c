"""Every console route for every kind of caller: anonymous, an account that is not staff,
staff without a step-up, staff whose step-up went stale, and staff.

Through the real admin app over HTTP; a refused command changes nothing.
"""

from __future__ import annotations

from datetime import timedelta
from uuid import UUID

import attrs
import httpx
import pytest

from outbox.domain.identity.rate_limits import Backoff
from outbox.entrypoints.http.app import create_admin_app
from outbox.entrypoints.observability import new_registry
from tests.integration.console.world import ConsoleWorld, csrf_of
from tests.integration.identity.api import PASSWORD

pytestmark = pytest.mark.integration

STAFF = "staff@example.com"
STRANGER = "stranger@example.com"


def _reads(dead: UUID) -> list[str]:
    return [
        "/console/",
        "/console/overview/live",
        "/console/messages",
        "/console/messages?state=dead_lettered&purpose=sign_up",
        f"/console/messages/{dead}",
        "/console/messages/bulk?state=dead_lettered&action=requeue",
        "/console/events",
        f"/console/events/{dead}",
        "/console/providers",
        "/console/suppressions",
        "/console/suppressions?lifted=1",
    ]


def _commands(dead: UUID) -> list[tuple[str, dict[str, str]]]:
    return [
        ("/console/messages/search", {"state": "dead_lettered"}),
        (
            f"/console/messages/{dead}/repairs",
            {"action": "reissue", "reason": "ticket 1", "idempotency_key": "k-1"},
        ),
        (
            "/console/messages/bulk",
            {
                "state": "dead_lettered",
                "action": "requeue",
                "reason": "ticket 2",
                "idempotency_key": "k-2",
                "as_of": "2100-01-01T00:00:00+00:00",
            },
        ),
        (
            f"/console/events/dead-letters/{dead}/repairs",
            {"action": "release", "reason": "ticket 3", "idempotency_key": "k-3"},
        ),
        ("/console/providers/pause", {"provider": "smtp", "reason": "ticket 4"}),
        ("/console/providers/smtp/resume", {"reason": "ticket 5"}),
        ("/console/suppressions/add", {"destination": "kim@example.com", "reason": "ticket 6"}),
        ("/console/suppressions/lift", {"destination": "kim@example.com", "reason": "ticket 7"}),
    ]


async def _state(world: ConsoleWorld) -> tuple[int, ...]:
    """Messages, staff audit rows, provider pauses, suppressions and their audit: what a
    refused command must not move."""
    [row] = await world.staff.api.rows(
        "SELECT (SELECT count(*) FROM outbox.messages),"
        " (SELECT count(*) FROM outbox.staff_audit),"
        " (SELECT count(*) FROM outbox.provider_pause_audit),"
        " (SELECT count(*) FROM outbox.suppressions),"
        " (SELECT count(*) FROM outbox.suppression_audit)"
    )
    return tuple(row)


async def _check_refused(
    world: ConsoleWorld,
    client: httpx.AsyncClient,
    dead: UUID,
    csrf: str,
    expected: tuple[int, str | None],
) -> None:
    for path in _reads(dead):
        response = await client.get(path)
        assert expected == (response.status_code, response.headers.get("location")), path
    before = await _state(world)
    for path, form in _commands(dead):
        response = await client.post(path, data={"csrf": csrf, **form})
        assert expected == (response.status_code, response.headers.get("location")), (
            path,
            response.text[-600:],
        )
    assert before == await _state(world)


async def test_anonymous_callers_are_sent_to_sign_in_and_change_nothing(world: ConsoleWorld):
    dead = (await world.staff.dead_code()).message_id
    async with world.client() as client:
        page = await client.get("/console/sign-in")
        assert 200 == page.status_code
        await _check_refused(world, client, dead, "x", (303, "/console/sign-in"))
        for path in ("/console/step-up",):
            assert (303, "/console/sign-in") == (
                (r := await client.get(path)).status_code,
                r.headers.get("location"),
            )


async def test_an_account_that_is_not_staff_is_refused_everything(world: ConsoleWorld):
    await world.account(STRANGER, staff=False)
    dead = (await world.staff.dead_code()).message_id
    async with world.client() as client:
        csrf = await world.stepped_up(client, STRANGER)
        await _check_refused(world, client, dead, csrf, (403, None))
        assert "Staff only" in (await client.get("/console/")).text


async def test_staff_without_a_step_up_are_sent_to_step_up(world: ConsoleWorld):
    await world.account(STAFF)
    dead = (await world.staff.dead_code()).message_id
    async with world.client() as client:
        csrf = await world.signed_in(client, STAFF)
        await _check_refused(world, client, dead, csrf, (303, "/console/step-up"))


async def test_staff_read_for_hours_but_a_command_needs_a_fresh_step_up(world: ConsoleWorld):
    """Issue 29, finding 4: every page, reads included, asked for a new code every five
    minutes. Pages now read with a step-up of the last eight hours; commands need a fresh
    one, and refusing a command keeps the pages readable."""
    await world.account(STAFF)
    dead = (await world.staff.dead_code()).message_id
    async with world.client() as client:
        csrf = await world.stepped_up(client, STAFF)
        assert 200 == (await client.get("/console/")).status_code
        world.advance(timedelta(minutes=6))  # past the five-minute elevation
        before = await _state(world)
        for path, form in _commands(dead):
            response = await client.post(path, data={"csrf": csrf, **form})
            assert (303, "/console/step-up") == (
                response.status_code,
                response.headers.get("location"),
            ), path
        assert before == await _state(world)
        for path in _reads(dead):
            response = await client.get(path)
            expected = 404 if path.startswith("/console/events/") else 200
            assert expected == response.status_code, path


async def test_staff_get_every_page_and_every_command(world: ConsoleWorld):
    await world.account(STAFF)
    dead = (await world.staff.dead_code()).message_id
    async with world.client() as client:
        csrf = await world.stepped_up(client, STAFF)
        for path in _reads(dead):
            response = await client.get(path)
            expected = 404 if path.startswith("/console/events/") else 200  # not an event id
            assert expected == response.status_code, path
            assert "default-src 'none'" in response.headers["content-security-policy"]
            assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
            assert "DENY" == response.headers["x-frame-options"]
        answers = [
            (await client.post(path, data={"csrf": csrf, **form})).status_code
            for path, form in _commands(dead)
        ]
    # search, reissue, bulk (nothing left to requeue), release (a message id names no
    # event dead letter), pause, resume, suppress, lift
    assert [303, 303, 200, 404, 303, 303, 303, 303] == answers
    [(actions,)] = await world.staff.api.rows(
        "SELECT array_agg(action ORDER BY id) FROM outbox.provider_pause_audit"
    )
    assert ["pause", "resume"] == actions
    [(reason,)] = await world.staff.api.rows(
        "SELECT console_reason FROM outbox.staff_audit WHERE action = 'reissue'"
    )
    assert "ticket 1" == reason
    rows = await world.staff.api.rows(
        "SELECT action, reason, actor_id IS NOT NULL, elevation_id IS NOT NULL"
        " FROM outbox.suppression_audit ORDER BY id"
    )
    assert [("add", "ticket 6", True, True), ("lift", "ticket 7", True, True)] == rows


async def test_a_form_without_the_session_csrf_token_is_refused(world: ConsoleWorld):
    await world.account(STAFF)
    async with world.client() as client:
        await world.stepped_up(client, STAFF)
        before = await _state(world)
        for token in ("", "not-the-token"):
            response = await client.post(
                "/console/providers/pause",
                data={"csrf": token, "provider": "ses", "reason": "no"},
            )
            assert 403 == response.status_code
        response = await client.post(
            "/console/providers/pause",
            data={
                "csrf": csrf_of((await client.get("/console/providers")).text),
                "provider": "ses",
                "reason": "x",
            },
            headers={"origin": "https://evil.example"},
        )
        assert 403 == response.status_code
        assert before == await _state(world)


async def test_sign_out_ends_the_session(world: ConsoleWorld):
    await world.account(STAFF)
    async with world.client() as client:
        csrf = await world.stepped_up(client, STAFF)
        response = await client.post("/console/sign-out", data={"csrf": csrf})
        assert (303, "/console/sign-in") == (response.status_code, response.headers["location"])
        response = await client.get("/console/")
        assert (303, "/console/sign-in") == (response.status_code, response.headers["location"])


async def test_an_idle_session_expires(world: ConsoleWorld):
    await world.account(STAFF)
    async with world.client() as client:
        await world.stepped_up(client, STAFF)
        world.advance(timedelta(minutes=16))
        response = await client.get("/console/providers")
        assert (303, "/console/sign-in") == (response.status_code, response.headers["location"])


async def test_behind_tls_the_cookie_is_secure_and_only_the_configured_origin_may_post(
    world: ConsoleWorld,
):
    await world.account(STAFF)
    console = attrs.evolve(world.console, secure=True, origin="https://ops.example.com")
    app = create_admin_app(
        world.staff.staff_services,
        operator=world.staff.operator,
        registry=new_registry(),
        console=console,
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="https://ops.example.com") as client:
        tls = ConsoleWorld(staff=world.staff, console=console, app=app)
        csrf = await tls.stepped_up(client, STAFF)
        assert {"__Host-outbox_console"} <= set(client.cookies.keys())
        form = {"csrf": csrf, "provider": "ses", "reason": "ticket 6"}
        foreign = await client.post(
            "/console/providers/pause", data=form, headers={"origin": "http://ops.example.com"}
        )
        own = await client.post(
            "/console/providers/pause", data=form, headers={"origin": "https://ops.example.com"}
        )
    assert (403, 303) == (foreign.status_code, own.status_code)


async def test_a_paced_step_up_says_no_new_code_was_sent(world: ConsoleWorld):
    """Issue 29, finding 4: a second sign-in moments after the first still said "a code is on
    its way" though the step-up request was paced and no code went out."""
    await world.account(STAFF)
    identity = world.staff.staff_services
    limits = identity.request_step_up.limits
    paced = attrs.evolve(
        identity,
        request_step_up=attrs.evolve(
            identity.request_step_up,
            limits=attrs.evolve(
                limits, policy=attrs.evolve(limits.policy, per_destination=Backoff())
            ),
        ),
    )
    console = attrs.evolve(world.console, identity=paced)
    app = create_admin_app(
        paced, operator=world.staff.operator, registry=new_registry(), console=console
    )
    here = ConsoleWorld(staff=world.staff, console=console, app=app)
    async with here.client() as first, here.client() as second:
        await here.signed_in(first, STAFF)
        page = await second.get("/console/sign-in")
        response = await second.post(
            "/console/sign-in",
            data={"csrf": csrf_of(page.text), "identifier": STAFF, "password": PASSWORD},
        )
        shown = await second.get(response.headers["location"])
        asked = await second.post("/console/step-up/code", data={"csrf": csrf_of(shown.text)})

    assert "/console/step-up?paced=1" == response.headers["location"]
    assert "No new code was sent" in shown.text
    assert "on its way" not in shown.text
    assert 429 == asked.status_code, asked.text[:2000]
    assert "No new code was sent" in asked.text
    assert [(1,)] == await world.staff.api.rows(
        "SELECT count(*) FROM outbox.messages WHERE purpose = 'step_up'"
    )


async def test_pausing_a_name_no_provider_has_is_refused_not_paused(world: ConsoleWorld):
    """Issue 29, finding 4: "sess" was answered "Paused" and paused nothing."""
    await world.account(STAFF)
    async with world.client() as client:
        csrf = await world.stepped_up(client, STAFF)
        response = await client.post(
            "/console/providers/pause", data={"csrf": csrf, "provider": "sess", "reason": "typo"}
        )

    assert 400 == response.status_code
    assert "no provider &#39;sess&#39;" in response.text or "no provider 'sess'" in response.text
    assert [] == await world.staff.api.rows("SELECT provider FROM outbox.provider_pauses")
