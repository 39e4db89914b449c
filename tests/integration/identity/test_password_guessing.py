"""Online password guessing against one account is slowed down (issue 28, finding 4).

The attack: nothing counted failed sign-ins per account, so a guesser (from as many client
addresses as it liked) had every guess evaluated at once, and the right password was
accepted right after. Now each failure of a streak makes the identifier's next sign-in wait
longer (1 s, 2 s, 4 s… at most a minute); a paced attempt is a 429 with Retry-After and its
password is not even looked at. Unknown identifiers are paced alike, and the owner can
still sign in by magic link meanwhile.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.integration.identity.api import PASSWORD, Api, problem_type
from tests.integration.identity.flows import ALICE

pytestmark = pytest.mark.integration


async def _guess(api: Api, identifier: str, password: str) -> tuple[int, str | None]:
    response = await api.post("/sessions", {"identifier": identifier, "password": password})
    return response.status_code, response.headers.get("Retry-After")


async def test_failed_sign_ins_make_the_next_one_wait_longer(api: Api) -> None:
    await api.signed_up(ALICE)

    burst = [await _guess(api, ALICE, f"guess number {n}") for n in range(8)]

    assert (401, None) == burst[0]
    assert all(status == 429 and retry is not None for status, retry in burst[1:])
    waits = []
    for n in range(1, 5):
        api.clock.advance(timedelta(seconds=int(burst[-1][1] or 0) if n == 1 else waits[-1]))
        assert 401 == (await _guess(api, ALICE, f"again {n}"))[0]
        status, retry = await _guess(api, ALICE, "the right one, too early")
        assert 429 == status
        waits.append(int(retry or 0))
    assert waits == sorted(waits)
    assert waits[-1] > waits[0]
    # The right password, typed once the wait is over, is accepted.
    api.clock.advance(timedelta(seconds=waits[-1]))
    assert 201 == (await _guess(api, ALICE, PASSWORD))[0]


async def test_an_unknown_identifier_is_paced_alike(api: Api) -> None:
    await api.signed_up(ALICE)
    stranger = "nobody@example.com"

    known = [(await _guess(api, ALICE, "wrong"))[0] for _ in range(3)]
    unknown = [(await _guess(api, stranger, "wrong"))[0] for _ in range(3)]

    assert [401, 429, 429] == known == unknown


async def test_a_paced_owner_still_signs_in_by_magic_link(api: Api) -> None:
    await api.signed_up(ALICE)
    for _ in range(5):
        await _guess(api, ALICE, "a guesser's try")
    status, _ = await _guess(api, ALICE, PASSWORD)
    assert 429 == status

    asked = await api.post("/magic-links", {"email": ALICE})
    link = (await api.deliver_one()).content.text
    token = link.rsplit("token=", 1)[-1].split()[0]
    redeemed = await api.post("/magic-links/redemptions", {"token": token})

    assert 201 == asked.status_code
    assert 201 == redeemed.status_code, problem_type(redeemed)


async def _fail_in_a_row(api: Api, identifier: str, times: int) -> None:
    """``times`` wrong passwords, each as soon as the pace allows it."""
    for n in range(times):
        status, retry = await _guess(api, identifier, f"wrong {n}")
        if status == 429:
            api.clock.advance(timedelta(seconds=int(retry or 0)))
            status, _ = await _guess(api, identifier, f"wrong {n}")
        assert 401 == status


async def test_the_owner_is_told_of_a_long_streak_once_an_hour(api: Api) -> None:
    await api.signed_up(ALICE)
    await api.deliver()

    await _fail_in_a_row(api, ALICE, 5)
    assert [] == await api.deliver()
    await _fail_in_a_row(api, ALICE, 1)
    [notice] = await api.deliver()
    await _fail_in_a_row(api, ALICE, 3)
    later = await api.deliver()
    await _fail_in_a_row(api, "nobody@example.com", 8)
    unknown = await api.deliver()

    assert ALICE == notice.destination
    assert "change=sign_in_failures" in notice.content.text
    assert [] == later
    assert [] == unknown
