"""Phishing through organizations and invitations, tried from outside: names that
carry links into invitation mail, unlimited organizations, a token used by someone else, and
concurrent invitations racing past the limits."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from outbox.application.identity.request_limits import RateLimitPolicy
from tests.integration.identity.api import Api, problem_type, token_of

pytestmark = pytest.mark.integration

GUEST = "guest@example.com"


async def _organization(api: Api, token: str, name: str = "Acme") -> Any:
    return await api.post("/organizations", {"name": name}, token=token)


@pytest.mark.parametrize(
    "name",
    [
        "Claim your prize at https://evil.example/login",
        "Acme (javascript:alert(1))",
        "Write to support@evil.example",
        "Visit evil.example today",
        "www.evil-bank.com",
        "Acme\u202egnp.exe",
        # Internationalised host names and look-alike dots (issue 28, low): mailed before.
        "Visit пример.рф today",
        "evil\u3002com",
        "evil\uff61com",
        "Bank-login.xn--p1ai",
        "Acme\nSubject: urgent",
        "x" * 101,
    ],
)
async def test_an_organization_name_cannot_carry_a_link(api: Api, name: str) -> None:
    founder = await api.signed_up("founder@example.com")

    refused = await _organization(api, founder, name)

    assert "urn:outbox:problem:validation-error" == problem_type(refused)
    assert [(0,)] == await api.rows("SELECT count(*) FROM identity.organizations")


async def test_ordinary_names_are_accepted(api: Api) -> None:
    founder = await api.signed_up("founder@example.com")

    for name in ["Acme Inc.", "Müller & Söhne GmbH", "R&D: Team 7", "L'Équipe"]:
        created = await _organization(api, founder, name)
        assert 201 == created.status_code, (name, created.text)


async def test_one_account_cannot_create_organizations_without_end(api: Api) -> None:
    founder = await api.signed_up("founder@example.com")
    api.tighten(organizations_per_account=RateLimitPolicy().organizations_per_account)

    answers = [await _organization(api, founder, f"Team {n}") for n in range(30)]

    assert "urn:outbox:problem:rate-limited" == problem_type(answers[-1])
    assert 0 < int(answers[-1].headers["retry-after"])
    [(created,)] = await api.rows("SELECT count(*) FROM identity.organizations")
    assert 10 == created


async def test_only_the_invited_address_can_accept(api: Api) -> None:
    founder = await api.signed_up("founder@example.com")
    organization = (await _organization(api, founder)).json()["id"]
    await api.post(f"/organizations/{organization}/invitations", {"email": GUEST}, token=founder)
    token = token_of(await api.deliver_one())
    mallory = await api.signed_up("mallory@example.com")

    stolen = await api.post("/invitations/acceptances", {"token": token}, token=mallory)

    assert 403 == stolen.status_code, stolen.text
    assert "urn:outbox:problem:invitation-for-another-address" == problem_type(stolen)
    [(members,)] = await api.rows("SELECT count(*) FROM identity.memberships")
    assert 1 == members
    guest = await api.signed_up(GUEST)
    accepted = await api.post("/invitations/acceptances", {"token": token}, token=guest)
    assert 201 == accepted.status_code, accepted.text


async def test_concurrent_invitations_cannot_pass_the_pending_limit(api: Api) -> None:
    founder = await api.signed_up("founder@example.com")
    organization = (await _organization(api, founder)).json()["id"]
    use_case = api.services.invite_member
    object.__setattr__(
        use_case,
        "invitation_limits",
        type(use_case.invitation_limits)(pending_per_organization=3),
    )

    answers = await asyncio.gather(
        *(
            api.post(
                f"/organizations/{organization}/invitations",
                {"email": f"guest{n}@example.com"},
                token=founder,
            )
            for n in range(12)
        )
    )

    assert 3 == sum(1 for a in answers if a.status_code == 201)
    assert all(a.status_code in {201, 409} for a in answers), [a.text for a in answers]

    [(pending,)] = await api.rows(
        "SELECT count(*) FROM identity.invitations WHERE state = 'pending'"
    )
    assert 3 == pending
    [(messages,)] = await api.rows(
        "SELECT count(*) FROM outbox.messages m"
        " JOIN identity.invitations i ON i.id = m.subject_id WHERE m.purpose = 'invitation'"
    )
    [(all_messages,)] = await api.rows(
        "SELECT count(*) FROM outbox.messages WHERE purpose = 'invitation'"
    )
    assert 3 == messages == all_messages
