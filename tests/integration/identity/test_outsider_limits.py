"""Attacks from outside on the limits: no outsider may turn them against an address's owner,
and no mailbox gets more than a few codes however its address is spelled."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta

import pytest

from outbox.application.identity.request_limits import RateLimitPolicy
from tests.integration.identity.api import Api, problem_type

pytestmark = pytest.mark.integration

ALICE = "alice@example.com"
WINDOW = timedelta(minutes=15)


def _most_in_one_window(times: list[datetime]) -> int:
    """The largest number of ``times`` that fall within one window starting at one of them."""
    return max((sum(1 for t in times if start <= t < start + WINDOW) for start in times), default=0)


@pytest.mark.parametrize(
    ("path", "field"), [("/password-recoveries", "identifier"), ("/magic-links", "email")]
)
async def test_an_outsider_hammering_an_address_cannot_keep_its_codes_away(
    api: Api, path: str, field: str
) -> None:
    """Two requests a minute for an hour: the owner's mailbox still gets a code or link
    every few minutes, and never more than five in fifteen minutes."""
    await api.signed_up(ALICE)
    api.tighten(per_destination=RateLimitPolicy().per_destination)
    delivered_at: list[datetime] = []

    for _ in range(120):
        response = await api.post(path, {field: ALICE})
        assert 201 == response.status_code, response.text
        if await api.deliver():
            delivered_at.append(api.clock.now())
        api.clock.advance(timedelta(seconds=30))

    gaps = [later - earlier for earlier, later in itertools.pairwise(delivered_at)]
    assert max(gaps) <= timedelta(minutes=5)
    assert _most_in_one_window(delivered_at) <= 5


def _case_variants(address: str, count: int) -> list[str]:
    """``count`` spellings of ``address`` that differ only in letter case."""
    local, _, domain = address.partition("@")
    variants = []
    for bits in range(1, count + 1):
        spelled = "".join(
            c.upper() if bits >> i & 1 else c for i, c in enumerate(local + domain[:3])
        )
        variants.append(f"{spelled[: len(local)]}@{spelled[len(local) :]}{domain[3:]}")
    return variants


async def test_case_variants_of_one_mailbox_share_one_limit_and_one_account(api: Api) -> None:
    """Eighteen spellings of one address used to give eighteen codes and eighteen accounts."""
    api.tighten(per_destination=RateLimitPolicy().per_destination)
    variants = _case_variants(ALICE, 18)
    assert 18 == len(set(variants))

    for variant in variants:
        response = await api.post("/sign-ups", {"identifier": variant})
        assert response.status_code in {201, 429}, response.text

    deliveries = await api.deliver()
    assert 1 == len(deliveries)
    assert ALICE == deliveries[0].destination
    assert [(1,)] == await api.rows("SELECT count(*) FROM identity.login_identifiers")


@pytest.mark.parametrize(
    "variants",
    [
        [f"alice+{n}@example.com" for n in range(20)],
        ["a.lice@gmail.com", "al.ice@gmail.com", "ali.ce@gmail.com", "alic.e@gmail.com"]
        + [f"a.l.i.c.e+{n}@googlemail.com" for n in range(16)],
    ],
    ids=["plus-tags", "gmail-dots"],
)
async def test_spellings_that_reach_one_inbox_share_its_pace(api: Api, variants: list[str]) -> None:
    """The attack (issue 28, low): twenty plus-tagged or dotted Gmail spellings of one inbox
    were twenty destinations to pace, so twenty codes landed in it within seconds. Each
    spelling is still its own address (and account), delivered as given."""
    api.tighten(per_destination=RateLimitPolicy().per_destination)

    statuses = [
        (await api.post("/sign-ups", {"identifier": variant})).status_code for variant in variants
    ]

    deliveries = await api.deliver()
    assert [variants[0]] == [delivery.destination for delivery in deliveries]
    assert [201] + [429] * (len(variants) - 1) == statuses


async def test_an_account_answers_to_every_spelling_of_its_address(api: Api) -> None:
    token = await api.signed_up("Alice@Example.COM")

    assert token
    assert await api.sign_in("ALICE@example.com")
    again = await api.post("/sign-ups", {"identifier": "alice@EXAMPLE.com"})
    assert 201 == again.status_code
    assert [] == await api.deliver()  # already registered: nothing is sent
    assert [(ALICE,)] == await api.rows("SELECT value FROM identity.login_identifiers")


async def _organization(api: Api, token: str, name: str) -> str:
    response = await api.post("/organizations", {"name": name}, token=token)
    assert 201 == response.status_code, response.text
    return str(response.json()["id"])


async def test_invitations_from_one_organization_do_not_block_another(api: Api) -> None:
    """Five invitations from a stranger's organization used to block the address for a day."""
    victim = "victim@example.com"
    mallory = await api.signed_up("mallory@example.com")
    founder = await api.signed_up("founder@example.com")
    hostile = await _organization(api, mallory, "Hostile")
    real = await _organization(api, founder, "Real")
    api.tighten(invitations_per_address=RateLimitPolicy().invitations_per_address)

    for _ in range(5):
        sent = await api.post(
            f"/organizations/{hostile}/invitations", {"email": victim}, token=mallory
        )
        assert 201 == sent.status_code, sent.text
    sixth = await api.post(
        f"/organizations/{hostile}/invitations", {"email": victim}, token=mallory
    )
    genuine = await api.post(f"/organizations/{real}/invitations", {"email": victim}, token=founder)

    assert "urn:outbox:problem:rate-limited" == problem_type(sixth)
    assert 201 == genuine.status_code, genuine.text
