"""The four code flows through the real app and database, with the worker (OX-S1..S4, OB7)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.integration.identity.api import PASSWORD, Api, problem_type

pytestmark = pytest.mark.integration

ALICE = "alice@example.com"


async def test_sign_up_to_step_up_end_to_end_with_the_worker(api: Api) -> None:
    response = await api.post("/sign-ups", {"identifier": ALICE, "password": PASSWORD})
    assert 201 == response.status_code
    assert ["challengeExpiresAt"] == list(response.json())
    delivery = await api.deliver_one()
    assert ALICE == delivery.destination

    confirmed = await api.post(
        "/sign-ups/confirmations", {"identifier": ALICE, "code": delivery.content.text}
    )
    assert 204 == confirmed.status_code
    token = await api.sign_in(ALICE)

    stepped = await api.post("/step-ups", token=token)
    assert 201 == stepped.status_code
    code = (await api.deliver_one()).content.text
    elevated = await api.post("/step-ups/confirmations", {"code": code}, token=token)
    assert 201 == elevated.status_code
    body = elevated.json()
    assert {"elevationToken", "expiresAt"} == set(body)
    [(digest,)] = await api.rows("SELECT token_digest FROM identity.elevations")
    assert body["elevationToken"] != digest
    assert [("published", None, True)] == [
        (state, reason, True) for state, reason, _, _ in await api.messages("step_up")
    ]


async def test_adding_a_phone_number_end_to_end(api: Api) -> None:
    token = await api.signed_up(ALICE)

    response = await api.post("/sign-in-methods", {"identifier": "+34612345678"}, token=token)
    assert 201 == response.status_code
    delivery = await api.deliver_one()
    assert "sms" == delivery.channel
    confirmed = await api.post(
        "/sign-in-methods/confirmations",
        {"identifier": "+34612345678", "code": delivery.content.text},
        token=token,
    )

    assert 204 == confirmed.status_code
    await api.sign_in("+34612345678")


async def test_password_recovery_end_to_end_ends_old_sessions(api: Api) -> None:
    old_token = await api.signed_up(ALICE)

    response = await api.post("/password-recoveries", {"identifier": ALICE})
    assert 201 == response.status_code
    code = (await api.deliver_one()).content.text
    confirmed = await api.post(
        "/password-recoveries/confirmations",
        {"identifier": ALICE, "code": code, "newPassword": "a new long password"},
    )

    assert 204 == confirmed.status_code
    assert 401 == (await api.post("/step-ups", token=old_token)).status_code
    await api.sign_in(ALICE, "a new long password")


@pytest.mark.parametrize(
    ("table", "code"),
    [("outbox.messages", "53100"), ("identity.challenges", "53100"), ("outbox.envelopes", "XX000")],
)
async def test_a_failed_insert_rolls_back_both_the_challenge_and_the_message(
    api: Api, table: str, code: str
) -> None:
    await api.execute(
        "CREATE FUNCTION public.refuse() RETURNS trigger LANGUAGE plpgsql AS"
        f" $$BEGIN RAISE EXCEPTION 'refused' USING ERRCODE = '{code}'; END$$"  # type: ignore[misc]
    )
    await api.execute(
        f"CREATE TRIGGER refuse BEFORE INSERT ON {table}"  # type: ignore[misc]
        " FOR EACH ROW EXECUTE FUNCTION public.refuse()"
    )

    response = await api.post("/sign-ups", {"identifier": ALICE, "password": PASSWORD})

    expected = 503 if code == "53100" else 500
    assert expected == response.status_code
    assert "refused" not in response.text
    for relation in ("identity.challenges", "identity.identities", "outbox.messages"):
        assert [(0,)] == await api.rows(f"SELECT count(*) FROM {relation}")  # type: ignore[misc]
    assert [] == await api.deliver()


async def test_a_resend_keeps_the_challenge_and_only_the_new_code_is_sent(api: Api) -> None:
    await api.post("/sign-ups", {"identifier": ALICE, "password": PASSWORD})
    first_code = await api.sealed_code()
    api.clock.advance(timedelta(minutes=2))

    response = await api.post("/sign-ups", {"identifier": ALICE, "password": PASSWORD})

    assert 201 == response.status_code
    [
        (old_state, old_reason, subject, old_envelope),
        (new_state, _, new_subject, _),
    ] = await api.messages("sign_up")
    assert ("dead_lettered", "superseded_by_resend", False) == (
        old_state,
        old_reason,
        old_envelope,
    )
    assert ("pending", subject) == (new_state, new_subject)
    [(challenges,)] = await api.rows("SELECT count(*) FROM identity.challenges")
    assert 1 == challenges
    delivery = await api.deliver_one()
    assert first_code != delivery.content.text
    refused = await api.post("/sign-ups/confirmations", {"identifier": ALICE, "code": first_code})
    assert "urn:outbox:problem:invalid-code" == problem_type(refused)
    confirmed = await api.post(
        "/sign-ups/confirmations", {"identifier": ALICE, "code": delivery.content.text}
    )
    assert 204 == confirmed.status_code


async def test_a_confirmation_cancels_the_message_still_unsent(api: Api) -> None:
    await api.post("/sign-ups", {"identifier": ALICE, "password": PASSWORD})
    code = await api.sealed_code()

    confirmed = await api.post("/sign-ups/confirmations", {"identifier": ALICE, "code": code})

    assert 204 == confirmed.status_code
    [(state, reason, _, has_envelope)] = await api.messages("sign_up")
    assert ("dead_lettered", "challenge_consumed", False) == (state, reason, has_envelope)
    assert [] == await api.deliver()


async def test_five_wrong_codes_lock_the_challenge(api: Api) -> None:
    await api.post("/sign-ups", {"identifier": ALICE, "password": PASSWORD})
    code = (await api.deliver_one()).content.text
    wrong = "000000" if code != "000000" else "111111"
    for _ in range(5):
        refused = await api.post("/sign-ups/confirmations", {"identifier": ALICE, "code": wrong})
        assert 400 == refused.status_code

    refused = await api.post("/sign-ups/confirmations", {"identifier": ALICE, "code": code})

    assert "urn:outbox:problem:invalid-code" == problem_type(refused)
    assert [("locked", 5)] == await api.rows(
        "SELECT state, failed_attempts FROM identity.challenges"
    )
    assert (
        401
        == (await api.post("/sessions", {"identifier": ALICE, "password": PASSWORD})).status_code
    )


async def test_an_expired_challenge_refuses_the_code_that_arrived(api: Api) -> None:
    await api.post("/sign-ups", {"identifier": ALICE, "password": PASSWORD})
    code = (await api.deliver_one()).content.text
    api.clock.advance(timedelta(minutes=10))

    refused = await api.post("/sign-ups/confirmations", {"identifier": ALICE, "code": code})

    assert "urn:outbox:problem:invalid-code" == problem_type(refused)
    [(ends_in,)] = await api.rows("SELECT expires_at - created_at FROM identity.challenges")
    assert timedelta(minutes=10) == ends_in


async def test_step_up_without_a_session_is_401_and_queues_nothing(api: Api) -> None:
    response = await api.post("/step-ups", token="not-a-session")

    assert "urn:outbox:problem:unauthenticated" == problem_type(response)
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert [(0,)] == await api.rows("SELECT count(*) FROM outbox.messages")
