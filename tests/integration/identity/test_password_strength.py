"""Guessable passwords are refused where a password is chosen (issue 28, finding 4).

The attack: a password of eight characters that is on every guessing list ("password1") or
is the address itself was accepted at sign-up and at recovery, so an online guesser had a
short list to try. Through the real app: the confirmation is a 400 naming the field, the
code stays usable, and nothing is saved.
"""

from __future__ import annotations

import pytest

from tests.integration.identity.api import Api, problem_type
from tests.integration.identity.flows import ALICE

pytestmark = pytest.mark.integration

GUESSABLE = ["password1", "qwerty123", "alice@example.com", "aaaaaaaaaa", "12345678"]


@pytest.mark.parametrize("password", GUESSABLE)
async def test_a_guessable_password_is_refused_at_sign_up(api: Api, password: str) -> None:
    assert ALICE == "alice@example.com"
    await api.post("/sign-ups", {"identifier": ALICE})
    code = (await api.deliver_one()).content.text

    refused = await api.post(
        "/sign-ups/confirmations", {"identifier": ALICE, "code": code, "password": password}
    )

    assert 400 == refused.status_code
    assert problem_type(refused).endswith("validation-error")
    assert "password" in refused.text
    assert password not in refused.text
    [(state,)] = await api.rows("SELECT state FROM identity.challenges")
    assert "open" == state
    taken = await api.post(
        "/sign-ups/confirmations",
        {"identifier": ALICE, "code": code, "password": "a passphrase nobody guesses"},
    )
    assert 204 == taken.status_code


async def test_a_guessable_password_is_refused_at_recovery(api: Api) -> None:
    await api.signed_up(ALICE)
    await api.post("/password-recoveries", {"identifier": ALICE})
    code = (await api.deliver_one()).content.text

    refused = await api.post(
        "/password-recoveries/confirmations",
        {"identifier": ALICE, "code": code, "newPassword": "password1"},
    )

    assert 400 == refused.status_code
    assert "newPassword" in refused.text
    signed_in = await api.post("/sessions", {"identifier": ALICE, "password": "password1"})
    assert 401 == signed_in.status_code
