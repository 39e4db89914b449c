"""The four code flows through the real app, database and worker, resends included."""

from __future__ import annotations

from datetime import timedelta

import pytest

from outbox.domain.purposes import Purpose
from tests.integration.identity.api import PASSWORD, Api, problem_type
from tests.integration.identity.flows import ALICE, CODE_PURPOSES, Flow

pytestmark = pytest.mark.integration


@pytest.fixture(params=CODE_PURPOSES, ids=[p.value for p in CODE_PURPOSES])
async def flow(request: pytest.FixtureRequest, api: Api) -> Flow:
    """A flow whose caller is set up (and whose set-up messages are already delivered)."""
    flow = Flow(purpose=request.param)
    await flow.set_up(api)
    return flow


async def _purpose_rows(api: Api, purpose: Purpose) -> tuple[int, int]:
    [(challenges,)] = await api.rows(
        "SELECT count(*) FROM identity.challenges WHERE purpose = %s", purpose.value
    )
    return challenges, len(await api.messages(purpose.value))


async def test_the_code_the_worker_delivers_confirms_the_challenge(api: Api, flow: Flow) -> None:
    response = await flow.request(api)

    assert 201 == response.status_code
    assert ["challengeExpiresAt"] == list(response.json())
    delivery = await api.deliver_one()
    assert flow.destination == delivery.destination
    confirmed = await flow.confirm(api, delivery.content.text)
    assert flow.confirmed_status == confirmed.status_code
    [(state, reason, _, has_envelope)] = await api.messages(flow.purpose.value)
    assert ("published", None, False) == (state, reason, has_envelope)
    [(challenge_state,)] = await api.rows(
        "SELECT state FROM identity.challenges WHERE purpose = %s", flow.purpose.value
    )
    assert "consumed" == challenge_state


@pytest.mark.parametrize(
    ("table", "sqlstate"),
    [("outbox.messages", "53100"), ("identity.challenges", "53100"), ("outbox.envelopes", "XX000")],
)
async def test_a_failed_insert_rolls_back_both_the_challenge_and_the_message(
    api: Api, flow: Flow, table: str, sqlstate: str
) -> None:
    await api.execute(
        "CREATE FUNCTION public.refuse() RETURNS trigger LANGUAGE plpgsql AS"
        f" $$BEGIN RAISE EXCEPTION 'refused' USING ERRCODE = '{sqlstate}'; END$$"  # type: ignore[misc]
    )
    await api.execute(
        f"CREATE TRIGGER refuse BEFORE INSERT ON {table}"  # type: ignore[misc]
        " FOR EACH ROW EXECUTE FUNCTION public.refuse()"
    )

    response = await flow.request(api)

    if flow.hides_failures:
        assert 201 == response.status_code
    else:
        assert (503 if sqlstate == "53100" else 500) == response.status_code
    assert "refused" not in response.text
    assert (0, 0) == await _purpose_rows(api, flow.purpose)
    assert [] == await api.deliver()


async def test_a_resend_keeps_the_challenge_and_only_the_new_code_is_sent(
    api: Api, flow: Flow
) -> None:
    await flow.request(api)
    first_code = await api.sealed_code()
    api.clock.advance(timedelta(minutes=2))

    response = await flow.request(api)

    assert 201 == response.status_code
    [
        (old_state, old_reason, subject, old_envelope),
        (new_state, _, new_subject, _),
    ] = await api.messages(flow.purpose.value)
    assert ("dead_lettered", "superseded_by_resend", False) == (
        old_state,
        old_reason,
        old_envelope,
    )
    assert ("pending", subject) == (new_state, new_subject)
    assert 1 == (await _purpose_rows(api, flow.purpose))[0]
    delivery = await api.deliver_one()
    assert first_code != delivery.content.text
    assert "urn:outbox:problem:invalid-code" == problem_type(await flow.confirm(api, first_code))
    assert flow.confirmed_status == (await flow.confirm(api, delivery.content.text)).status_code


async def test_a_confirmation_cancels_the_message_still_unsent(api: Api, flow: Flow) -> None:
    await flow.request(api)
    code = await api.sealed_code()

    confirmed = await flow.confirm(api, code)

    assert flow.confirmed_status == confirmed.status_code
    [(state, reason, _, has_envelope)] = await api.messages(flow.purpose.value)
    assert ("dead_lettered", "challenge_consumed", False) == (state, reason, has_envelope)
    # Only the security notice of the change, if it makes one, is still sent; no code.
    assert {"security_notice"} >= {d.content.subject for d in await api.deliver()}


async def test_five_wrong_codes_lock_the_challenge(api: Api, flow: Flow) -> None:
    await flow.request(api)
    code = (await api.deliver_one()).content.text
    wrong = "000000" if code != "000000" else "111111"
    for _ in range(5):
        assert 400 == (await flow.confirm(api, wrong)).status_code

    refused = await flow.confirm(api, code)

    assert "urn:outbox:problem:invalid-code" == problem_type(refused)
    assert [("locked", 5)] == await api.rows(
        "SELECT state, failed_attempts FROM identity.challenges WHERE purpose = %s",
        flow.purpose.value,
    )


async def test_an_expired_challenge_refuses_the_code_that_arrived(api: Api, flow: Flow) -> None:
    await flow.request(api)
    code = (await api.deliver_one()).content.text
    api.clock.advance(timedelta(minutes=10))

    refused = await flow.confirm(api, code)

    assert "urn:outbox:problem:invalid-code" == problem_type(refused)
    [(lifetime,)] = await api.rows(
        "SELECT expires_at - created_at FROM identity.challenges WHERE purpose = %s",
        flow.purpose.value,
    )
    assert timedelta(minutes=10) == lifetime


async def test_sign_up_to_step_up_end_to_end(api: Api) -> None:
    """The README's walk-through: sign up, confirm, sign in, step up, get an elevation."""
    token = await api.signed_up(ALICE)

    assert 201 == (await api.post("/step-ups", token=token)).status_code
    code = (await api.deliver_one()).content.text
    elevated = await api.post("/step-ups/confirmations", {"code": code}, token=token)

    assert 201 == elevated.status_code
    assert {"elevationToken", "expiresAt"} == set(elevated.json())
    [(digest,)] = await api.rows("SELECT token_digest FROM identity.elevations")
    assert elevated.json()["elevationToken"] != digest


async def test_a_recovery_ends_old_sessions_and_sets_the_new_password(api: Api) -> None:
    old_token = await api.signed_up(ALICE)
    await api.post("/password-recoveries", {"identifier": ALICE})
    code = (await api.deliver_one()).content.text

    await api.post(
        "/password-recoveries/confirmations",
        {"identifier": ALICE, "code": code, "newPassword": "a new long password"},
    )

    assert 401 == (await api.post("/step-ups", token=old_token)).status_code
    assert (
        401
        == (await api.post("/sessions", {"identifier": ALICE, "password": PASSWORD})).status_code
    )
    api.clock.advance(timedelta(seconds=1))  # a failed sign-in paces the next one
    await api.sign_in(ALICE, "a new long password")


async def test_a_new_phone_number_signs_in(api: Api) -> None:
    token = await api.signed_up(ALICE)
    await api.add_sign_in_method(token, "+34612345678")
    delivery = await api.deliver_one()
    assert "sms" == delivery.channel

    await api.post(
        "/sign-in-methods/confirmations",
        {"identifier": "+34612345678", "code": delivery.content.text},
        token=token,
    )

    await api.sign_in("+34612345678")


async def test_step_up_without_a_session_is_401_and_queues_nothing(api: Api) -> None:
    response = await api.post("/step-ups", token="not-a-session")

    assert "urn:outbox:problem:unauthenticated" == problem_type(response)
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert [(0,)] == await api.rows("SELECT count(*) FROM outbox.messages")
