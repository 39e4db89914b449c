"""Account takeover from the outside, through the real app (docs/identity.md "Accounts" and the
wrong-code budget of "Limits"): pre-hijacking a pending sign-up, a stolen bearer token made
permanent, and guessing codes across challenges."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.integration.identity.api import PASSWORD, Api, problem_type

pytestmark = pytest.mark.integration

ALICE = "alice@example.com"
MALLORY = "mallory@evil.example"
MALLORY_PASSWORD = "mallory's own password"


async def _sign_in_status(api: Api, identifier: str, password: str) -> int:
    response = await api.post("/sessions", {"identifier": identifier, "password": password})
    return int(response.status_code)


# Finding 2: sign-up pre-hijacking ------------------------------------------------------------


async def test_a_second_sign_up_for_a_pending_address_cannot_choose_its_password(
    api: Api,
) -> None:
    """The owner signs up, a stranger signs the same address up again with a password of
    their own, the owner types the newest code: the stranger still cannot sign in."""
    await api.post("/sign-ups", {"identifier": ALICE})
    with_password = await api.post("/sign-ups", {"identifier": ALICE, "password": MALLORY_PASSWORD})
    resent = await api.post("/sign-ups", {"identifier": ALICE})
    newest = (await api.deliver())[-1].content.text

    confirmed = await api.post(
        "/sign-ups/confirmations", {"identifier": ALICE, "code": newest, "password": PASSWORD}
    )

    assert "urn:outbox:problem:validation-error" == problem_type(with_password)
    assert 201 == resent.status_code
    assert 204 == confirmed.status_code, confirmed.text
    assert 401 == await _sign_in_status(api, ALICE, MALLORY_PASSWORD)
    api.clock.advance(timedelta(seconds=1))  # a failed sign-in paces the next one
    assert 201 == await _sign_in_status(api, ALICE, PASSWORD)


async def test_a_stranger_who_signed_an_address_up_first_cannot_sign_in_after_the_owner(
    api: Api,
) -> None:
    """The stranger's sign-up comes first; the owner confirms the code they received."""
    await api.post("/sign-ups", {"identifier": ALICE, "password": MALLORY_PASSWORD})
    await api.post("/sign-ups", {"identifier": ALICE})
    code = (await api.deliver_one()).content.text

    confirmed = await api.post(
        "/sign-ups/confirmations", {"identifier": ALICE, "code": code, "password": PASSWORD}
    )

    assert 204 == confirmed.status_code, confirmed.text
    assert 401 == await _sign_in_status(api, ALICE, MALLORY_PASSWORD)
    api.clock.advance(timedelta(seconds=1))  # a failed sign-in paces the next one
    assert 201 == await _sign_in_status(api, ALICE, PASSWORD)


# Finding 4: a stolen bearer token --------------------------------------------------------------


async def test_a_stolen_bearer_token_alone_cannot_add_a_sign_in_method(api: Api) -> None:
    """With only the owner's bearer token, the thief tries to add an address of their own
    (then to reset the password through it): refused, nothing is sent to the thief."""
    stolen = await api.signed_up(ALICE)

    requested = await api.post("/sign-in-methods", {"identifier": MALLORY}, token=stolen)

    assert 403 == requested.status_code
    assert "urn:outbox:problem:step-up-required" == problem_type(requested)
    assert [] == [d for d in await api.deliver() if d.destination == MALLORY]
    assert [(0,)] == await api.rows(
        "SELECT count(*) FROM identity.challenges WHERE purpose = 'add_sign_in_method'"
    )


async def test_an_added_sign_in_method_notifies_the_existing_address(api: Api) -> None:
    token = await api.signed_up(ALICE)

    await api.add_sign_in_method(token, "+34612345678")
    code = (await api.deliver_one()).content.text
    confirmed = await api.post(
        "/sign-in-methods/confirmations",
        {"identifier": "+34612345678", "code": code},
        token=token,
    )

    assert 204 == confirmed.status_code, confirmed.text
    [notice] = await api.deliver()
    assert (ALICE, "security_notice") == (notice.destination, notice.content.subject)
    assert "change=sign_in_method_added" in notice.content.text
    assert code not in notice.content.text
    assert "+34612345678" not in notice.content.text


async def test_a_password_reset_notifies_every_verified_identifier(api: Api) -> None:
    await api.signed_up(ALICE)
    await api.post("/password-recoveries", {"identifier": ALICE})
    code = (await api.deliver_one()).content.text

    await api.post(
        "/password-recoveries/confirmations",
        {"identifier": ALICE, "code": code, "newPassword": "a new long password"},
    )

    [notice] = await api.deliver()
    assert (ALICE, "security_notice") == (notice.destination, notice.content.subject)
    assert "change=password_reset" in notice.content.text
    assert "a new long password" not in notice.content.text


async def test_signing_out_ends_only_the_current_session(api: Api) -> None:
    token = await api.signed_up(ALICE)
    other = await api.sign_in(ALICE)

    signed_out = await api.client.delete(
        "/sessions/current", headers={"Authorization": f"Bearer {token}"}
    )

    assert 204 == signed_out.status_code
    assert 401 == (await api.post("/step-ups", token=token)).status_code
    assert 201 == (await api.post("/step-ups", token=other)).status_code


async def test_revoking_all_sessions_ends_every_session_and_notifies_the_owner(api: Api) -> None:
    stolen = await api.signed_up(ALICE)
    owner = await api.sign_in(ALICE)

    revoked = await api.client.delete("/sessions", headers={"Authorization": f"Bearer {owner}"})

    assert 204 == revoked.status_code
    for token in (stolen, owner):
        assert 401 == (await api.post("/step-ups", token=token)).status_code
    [notice] = await api.deliver()
    assert (ALICE, "security_notice") == (notice.destination, notice.content.subject)
    assert "change=sessions_revoked" in notice.content.text


# Finding 8: guessing codes across challenges ---------------------------------------------------


async def test_wrong_codes_across_challenges_are_capped_per_day_and_the_owner_is_told(
    api: Api,
) -> None:
    """A stranger opens recovery challenge after challenge and types wrong codes into each:
    after the day's budget even the right code is refused, and the owner gets a notice."""
    await api.signed_up(ALICE)
    wrong_codes = 0
    for _ in range(4):  # four challenges, locked by five wrong codes each
        await api.post("/password-recoveries", {"identifier": ALICE})
        code = await api.sealed_code()
        wrong = "000000" if code != "000000" else "111111"
        for _ in range(5):
            await _recover(api, wrong)
            wrong_codes += 1
    await api.post("/password-recoveries", {"identifier": ALICE})
    right = await api.sealed_code()

    refused = await _recover(api, right)

    assert 20 == wrong_codes
    assert "urn:outbox:problem:invalid-code" == problem_type(refused)
    assert 401 == await _sign_in_status(api, ALICE, "a new long password")
    notices = [d for d in await api.deliver() if d.content.subject == "security_notice"]
    assert [ALICE] == [d.destination for d in notices]
    assert "change=wrong_code_budget_exhausted" in notices[0].content.text
    # The budget is per day: tomorrow the owner can recover again.
    api.clock.advance(timedelta(days=1))
    await api.post("/password-recoveries", {"identifier": ALICE})
    assert 204 == (await _recover(api, await api.sealed_code())).status_code


async def test_a_challenge_locked_by_wrong_codes_withdraws_its_unsent_message(api: Api) -> None:
    await api.signed_up(ALICE)
    await api.post("/password-recoveries", {"identifier": ALICE})
    code = await api.sealed_code()
    wrong = "000000" if code != "000000" else "111111"

    for _ in range(5):
        await _recover(api, wrong)

    assert [("dead_lettered", "challenge_locked", False)] == [
        (state, reason, envelope)
        for state, reason, _, envelope in await api.messages("password_recovery")
    ]
    assert [] == await api.deliver()


async def _recover(api: Api, code: str) -> Any:
    return await api.post(
        "/password-recoveries/confirmations",
        {"identifier": ALICE, "code": code, "newPassword": "a new long password"},
    )
