"""The HTTP app under hostile and ordinary use: nothing tells accounts apart, nothing leaks.

Anti-enumeration, fuzzed: for any way a client may write an identifier (spaces around it,
upper-case domain, stray characters that make it invalid), a known account and an unknown
one written the same way get byte-identical answers on the password-recovery and
magic-link routes. The identity suite checks this for one spelling; schemathesis
(tests/integration/identity/test_openapi_fuzzing.py and the staff routes' twin) checks
every route for 5xx and undocumented statuses.

Custody, end to end: every flow of the API — failed attempts included — runs through the
real app with the production telemetry, then every log line and every table is scanned
for the codes, tokens, passwords and destinations those flows handled.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.integration.identity.api import PASSWORD
from tests.reliability.leak_scan import Needles, scan_database, scan_lines
from tests.reliability.profile import PROFILE, record_counts
from tests.security.http_app import App, serving

pytestmark = pytest.mark.integration

KNOWN_EMAIL, UNKNOWN_EMAIL = "known.person@example.com", "other.person@example.com"
KNOWN_PHONE, UNKNOWN_PHONE = "+34600000001", "+34600000002"
STAFF_EMAIL = "staff.member@example.com"
ROUTES = {"email": [("/password-recoveries", "identifier"), ("/magic-links", "email")]}
ROUTES["phone"] = [("/password-recoveries", "identifier")]


@pytest.fixture
async def app(database_url: str) -> AsyncIterator[App]:
    """The app with a verified email account and a verified phone account."""
    async with serving(database_url) as served:
        await served.signed_up(KNOWN_EMAIL)
        await served.signed_up(KNOWN_PHONE)
        yield served


def _spell(address: str, spelling: tuple[str, str, bool, str, int]) -> str:
    """``address`` written one way: surrounding space, domain case, a stray string inserted."""
    before, after, upper_domain, stray, where = spelling
    if upper_domain and "@" in address:
        local, _, domain = address.partition("@")
        address = f"{local}@{domain.upper()}"
    where = min(where, len(address))
    return f"{before}{address[:where]}{stray}{address[where:]}{after}"


spellings = st.tuples(
    st.sampled_from(["", " ", "\t", "  ", "\n"]),
    st.sampled_from(["", " ", "\t", "\r\n"]),
    st.booleans(),
    st.sampled_from(["", "", "", "x", ".", "@", "+", " ", "\x00", "é", "%40"])
    | st.text(max_size=3),
    st.integers(0, 30),
)


def _wire(response: Any) -> tuple[int, list[tuple[str, str]], bytes]:
    return response.status_code, sorted(response.headers.items()), response.content


@settings(
    max_examples=PROFILE.http_fuzz_examples,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(spelling=spellings, kind=st.sampled_from(["email", "phone"]))
async def test_known_and_unknown_identifiers_look_alike_however_they_are_written(
    app: App, spelling: tuple[str, str, bool, str, int], kind: str
) -> None:
    known, unknown = (
        (KNOWN_EMAIL, UNKNOWN_EMAIL) if kind == "email" else (KNOWN_PHONE, UNKNOWN_PHONE)
    )
    for path, field in ROUTES[kind]:
        for_known = await app.post(path, {field: _spell(known, spelling)})
        for_unknown = await app.post(path, {field: _spell(unknown, spelling)})

        assert for_known.status_code in {201, 400}, for_known.text
        assert _wire(for_known) == _wire(for_unknown)


async def test_no_log_line_and_no_table_holds_a_secret_after_every_flow(
    app: App, database_url: str
) -> None:
    secrets: list[str] = [PASSWORD]
    token = (await app.post("/sessions", {"identifier": KNOWN_EMAIL, "password": PASSWORD})).json()[
        "token"
    ]
    secrets.append(token)
    # Failures first: a wrong password, a wrong code, a malformed body, a stranger's token.
    await app.post("/sessions", {"identifier": KNOWN_EMAIL, "password": "wrong-password-9"})
    await app.post("/sign-ups", {"identifier": "newcomer@example.com"})
    right = await app.code_for("newcomer@example.com")
    wrong = "000000" if right != "000000" else "111111"
    await app.post(
        "/sign-ups/confirmations",
        {"identifier": "newcomer@example.com", "code": wrong, "password": PASSWORD},
    )
    await app.post("/sign-ups", {"identifier": "bad@@example.com"})
    await app.post("/step-ups", token="not-a-real-token-but-long-enough-0123456789")
    secrets.append(right)
    # A step-up, a second sign-in method with it, an invitation accepted, a magic link redeemed.
    await app.post("/step-ups", token=token)
    step_code = await app.code_for(KNOWN_EMAIL)
    elevation = await app.post("/step-ups/confirmations", {"code": step_code}, token=token)
    elevation_token = elevation.json()["elevationToken"]
    await app.post(
        "/sign-in-methods",
        {"identifier": "second@example.com"},
        token=token,
        **{"Elevation-Token": elevation_token},
    )
    code = await app.code_for("second@example.com")
    await app.post(
        "/sign-in-methods/confirmations",
        {"identifier": "second@example.com", "code": code},
        token=token,
    )
    secrets += [code, step_code, elevation_token]
    organization = (await app.post("/organizations", {"name": "Acme"}, token=token)).json()["id"]
    await app.post(
        f"/organizations/{organization}/invitations", {"email": "guest@example.com"}, token=token
    )
    invitation = await app.code_for("guest@example.com")
    guest = await app.signed_up("guest@example.com")
    await app.post("/invitations/acceptances", {"token": invitation}, token=guest)
    await app.post("/magic-links", {"email": KNOWN_EMAIL})
    link = await app.code_for(KNOWN_EMAIL)
    redeemed = await app.post("/magic-links/redemptions", {"token": link})
    secrets += [guest, invitation, link, redeemed.json().get("token", "")]
    # Password recovery with a new password, and the staff routes as a stepped-up staff member.
    await app.post("/password-recoveries", {"identifier": KNOWN_PHONE})
    recovery = await app.code_for(KNOWN_PHONE)
    new_password = "a brand new passphrase"
    await app.post(
        "/password-recoveries/confirmations",
        {"identifier": KNOWN_PHONE, "code": recovery, "newPassword": new_password},
    )
    secrets += [recovery, new_password]
    secrets.append(await app.signed_up(STAFF_EMAIL))
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        await conn.execute("SELECT outbox.grant_staff(%s)", (STAFF_EMAIL,))
    staff_token, staff_elevation = await app.staff_elevated(STAFF_EMAIL)
    secrets += [staff_token, staff_elevation]
    for path in ("backlog", "dead-letters"):
        answer = await app.admin.get(
            f"/platform-admin/security-outbox/{path}",
            headers={"Authorization": f"Bearer {staff_token}", "Elevation-Token": staff_elevation},
        )
        assert 200 == answer.status_code, answer.text

    needles = Needles.of(
        secrets=[s for s in secrets if s],
        destinations=[
            KNOWN_EMAIL,
            KNOWN_PHONE,
            "newcomer@example.com",
            "second@example.com",
            "guest@example.com",
        ],
    )
    lines = app.lines
    assert len(lines) > 20  # the flows did log
    found = scan_lines(lines, needles) + scan_database(database_url, needles)
    record_counts(
        "7 HTTP flows: log and table scan",
        {"log_lines": len(lines), "secrets": len(needles.secrets), "leaks": len(found)},
    )
    assert [] == found
