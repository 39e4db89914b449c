"""Organizations and invitations through the real app, limits included."""

from __future__ import annotations

from datetime import timedelta

import pytest

from outbox.domain.identity.rate_limits import RateLimit
from tests.integration.identity.api import INVITATION_BASE, Api, problem_type, token_of

pytestmark = pytest.mark.integration

GUEST = "guest@example.com"


async def _organization(api: Api, token: str, name: str = "Acme") -> str:
    response = await api.post("/organizations", {"name": name}, token=token)
    assert 201 == response.status_code, response.text
    assert name == response.json()["name"]
    return str(response.json()["id"])


async def _invite(api: Api, token: str, organization: str, email: str = GUEST) -> object:
    return await api.post(
        f"/organizations/{organization}/invitations", {"email": email}, token=token
    )


async def test_an_invitation_is_delivered_as_a_link_and_accepted_once(api: Api) -> None:
    founder = await api.signed_up("founder@example.com")
    organization = await _organization(api, founder)

    invited = await _invite(api, founder, organization)
    assert 201 == invited.status_code  # type: ignore[attr-defined]
    assert {"id", "expiresAt"} == set(invited.json())  # type: ignore[attr-defined]
    delivery = await api.deliver_one()
    assert GUEST == delivery.destination
    assert delivery.content.text.startswith(f"{INVITATION_BASE}#token=")
    guest = await api.signed_up(GUEST)
    accepted = await api.post(
        "/invitations/acceptances", {"token": token_of(delivery)}, token=guest
    )
    again = await api.post("/invitations/acceptances", {"token": token_of(delivery)}, token=guest)

    assert 201 == accepted.status_code
    assert {"organizationId": organization} == accepted.json()
    assert "urn:outbox:problem:invalid-token" == problem_type(again)
    refused = await _invite(api, guest, organization, "other@example.com")
    assert "urn:outbox:problem:permission-required" == problem_type(refused)


async def test_a_stranger_may_not_invite(api: Api) -> None:
    founder = await api.signed_up("founder@example.com")
    stranger = await api.signed_up("stranger@example.com")
    organization = await _organization(api, founder)

    refused = await _invite(api, stranger, organization)

    assert 403 == refused.status_code  # type: ignore[attr-defined]
    assert "organization.account.manage" == refused.json()["permission"]  # type: ignore[attr-defined]
    assert [] == await api.messages("invitation")


async def test_revoking_withdraws_the_unsent_message_and_kills_the_token(api: Api) -> None:
    founder = await api.signed_up("founder@example.com")
    organization = await _organization(api, founder)
    invited = await _invite(api, founder, organization)
    invitation = invited.json()["id"]  # type: ignore[attr-defined]

    revoked = await api.client.delete(
        f"/organizations/{organization}/invitations/{invitation}",
        headers={"Authorization": f"Bearer {founder}"},
    )
    again = await api.client.delete(
        f"/organizations/{organization}/invitations/{invitation}",
        headers={"Authorization": f"Bearer {founder}"},
    )

    assert 204 == revoked.status_code
    assert "urn:outbox:problem:invitation-not-pending" == problem_type(again)
    [(state, reason, _, has_envelope)] = await api.messages("invitation")
    assert ("dead_lettered", "invitation_revoked", False) == (state, reason, has_envelope)
    assert [] == await api.deliver()


async def test_inviting_again_reissues_and_only_the_new_link_is_sent(api: Api) -> None:
    founder = await api.signed_up("founder@example.com")
    organization = await _organization(api, founder)
    await _invite(api, founder, organization)

    await _invite(api, founder, organization)

    states = [(state, reason) for state, reason, _, _ in await api.messages("invitation")]
    assert [("dead_lettered", "invitation_revoked"), ("pending", None)] == states
    assert 1 == len(await api.deliver())


async def test_two_organizations_inviting_one_address_are_both_delivered(api: Api) -> None:
    founder = await api.signed_up("founder@example.com")
    first = await _organization(api, founder, "First")
    second = await _organization(api, founder, "Second")

    await _invite(api, founder, first)
    await _invite(api, founder, second)

    deliveries = await api.deliver()
    assert [GUEST, GUEST] == [d.destination for d in deliveries]
    assert 2 == len({token_of(d) for d in deliveries})


async def test_the_pending_limit_and_the_send_limits_refuse(api: Api) -> None:
    founder = await api.signed_up("founder@example.com")
    organization = await _organization(api, founder)
    api.tighten(
        invitations_per_organization=RateLimit(limit=3, window=timedelta(hours=1)),
        invitations_per_address=RateLimit(limit=1, window=timedelta(days=1)),
    )
    use_case = api.services.invite_member
    object.__setattr__(
        use_case,
        "invitation_limits",
        type(use_case.invitation_limits)(pending_per_organization=1),
    )

    assert 201 == (await _invite(api, founder, organization, "a@example.com")).status_code  # type: ignore[attr-defined]
    pending = await _invite(api, founder, organization, "b@example.com")
    per_address = await _invite(api, founder, organization, "a@example.com")
    object.__setattr__(
        use_case,
        "invitation_limits",
        type(use_case.invitation_limits)(pending_per_organization=10),
    )
    for address in ("b@example.com", "c@example.com"):
        assert 201 == (await _invite(api, founder, organization, address)).status_code  # type: ignore[attr-defined]
    per_organization = await _invite(api, founder, organization, "d@example.com")

    assert "urn:outbox:problem:invitation-limit-reached" == problem_type(pending)
    assert "urn:outbox:problem:rate-limited" == problem_type(per_address)
    assert 86400 == int(per_address.headers["retry-after"])  # type: ignore[attr-defined]
    assert "urn:outbox:problem:rate-limited" == problem_type(per_organization)
    assert 3600 == int(per_organization.headers["retry-after"])  # type: ignore[attr-defined]
    assert 3 == len(await api.messages("invitation"))


async def test_an_unknown_organization_is_refused_like_a_foreign_one(api: Api) -> None:
    founder = await api.signed_up("founder@example.com")

    refused = await _invite(api, founder, "01900000-0000-7000-8000-000000000000")

    assert "urn:outbox:problem:permission-required" == problem_type(refused)
