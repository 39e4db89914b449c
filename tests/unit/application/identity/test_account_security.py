"""Account security: a step-up to add a method, security notices, signing out,
and the daily wrong-code budget across challenges."""

from __future__ import annotations

from datetime import timedelta

import pytest

from outbox.application.identity.confirm_password_recovery import ConfirmPasswordRecoveryCommand
from outbox.application.identity.confirm_sign_in_method import ConfirmSignInMethodCommand
from outbox.application.identity.errors import InvalidCode, StepUpRequired, Unauthenticated
from outbox.application.identity.principal import Principal
from outbox.application.identity.request_password_recovery import RequestPasswordRecoveryCommand
from outbox.application.identity.request_sign_in_method import RequestSignInMethodCommand
from outbox.application.identity.sign_in import SignInCommand
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import Message, State
from outbox.domain.identity.security_changes import SecurityChange
from outbox.domain.purposes import Purpose
from tests.unit.application.identity.world import CLIENT, PASSWORD, World

ALICE = "alice@example.com"
PHONE = "+34612345678"


def add_method(principal: Principal, elevation: str | None) -> RequestSignInMethodCommand:
    return RequestSignInMethodCommand(
        principal=principal, elevation_token=elevation, identifier=PHONE, client_address=CLIENT
    )


def notices(world: World, change: SecurityChange | None = None) -> list[Message]:
    return [
        m
        for m in world.messages(Purpose.SECURITY_NOTICE)
        if change is None or m.params["change"] == change
    ]


async def _added_phone(world: World, principal: Principal) -> None:
    await world.request_sign_in_method(add_method(principal, await world.elevated(principal)))
    await world.confirm_sign_in_method(
        ConfirmSignInMethodCommand(
            identity_id=principal.identity_id,
            identifier=PHONE,
            code=world.last_secret(Purpose.ADD_SIGN_IN_METHOD),
            client_address=CLIENT,
        )
    )


# A fresh step-up to add a sign-in method ------------------------------------------------------


async def test_adding_a_method_without_an_elevation_opens_nothing(world: World) -> None:
    principal = await world.signed_up(ALICE)

    with pytest.raises(StepUpRequired):
        await world.request_sign_in_method(add_method(principal, None))

    assert [] == world.messages(Purpose.ADD_SIGN_IN_METHOD)
    assert [] == [
        c for c in world.db.tables.challenges.values() if c.purpose is not Purpose.SIGN_UP
    ]


async def test_an_elevation_of_another_session_or_an_expired_one_is_refused(world: World) -> None:
    principal = await world.signed_up(ALICE)
    elevation = await world.elevated(principal)
    other_session = await world.signed_up("bob@example.com")

    with pytest.raises(StepUpRequired):
        await world.request_sign_in_method(add_method(other_session, elevation))
    world.clock.advance(timedelta(minutes=5))
    with pytest.raises(StepUpRequired):
        await world.request_sign_in_method(add_method(principal, elevation))

    assert [] == world.messages(Purpose.ADD_SIGN_IN_METHOD)


# Security notices ------------------------------------------------------------------------------


async def test_an_added_method_is_told_to_the_identifiers_verified_before_it(world: World) -> None:
    principal = await world.signed_up(ALICE)

    await _added_phone(world, principal)
    await world.consume_events()

    [notice] = notices(world, SecurityChange.SIGN_IN_METHOD_ADDED)
    assert (ALICE, principal.identity_id) == (notice.destination, notice.subject_id)
    assert SecurityChange.SIGN_IN_METHOD_ADDED == notice.params["change"]
    assert "+34***78" == notice.params["identifier"]
    assert notice.sealed_secret is None
    assert world.clock.now().isoformat() == notice.params["occurred_at"]


async def test_a_password_reset_is_told_to_every_verified_identifier(world: World) -> None:
    principal = await world.signed_up(ALICE)
    await _added_phone(world, principal)
    await world.request_password_recovery(
        RequestPasswordRecoveryCommand(identifier=ALICE, client_address=CLIENT)
    )

    await world.confirm_password_recovery(
        ConfirmPasswordRecoveryCommand(
            identifier=ALICE,
            code=world.last_secret(Purpose.PASSWORD_RECOVERY),
            new_password="a new long password",
            client_address=CLIENT,
        )
    )

    await world.consume_events()
    reset = notices(world, SecurityChange.PASSWORD_RESET)
    assert [(ALICE, "email"), (PHONE, "sms")] == [(n.destination, n.channel) for n in reset]
    assert all("a new long password" not in str(n.params) for n in reset)


async def test_signing_out_ends_only_this_session_and_tells_nobody(world: World) -> None:
    principal = await world.signed_up(ALICE)
    this_token = world.secrets.issued[-1]
    other = await world.sign_in(_sign_in())

    await world.sign_out(principal)

    with pytest.raises(Unauthenticated):
        await world.authenticate(this_token)
    assert other.identity_id == (await world.authenticate(other.token)).identity_id
    assert [] == notices(world)


async def test_revoking_every_session_ends_them_all_and_tells_the_owner(world: World) -> None:
    first = await world.signed_up(ALICE)
    first_token = world.secrets.issued[-1]
    second_token = (await world.sign_in(_sign_in())).token

    revoked = await world.revoke_sessions(first)

    assert 2 == revoked
    for token in (first_token, second_token):
        with pytest.raises(Unauthenticated):
            await world.authenticate(token)
    assert [] == notices(world)  # the event is appended; its consumer sends the notice
    await world.consume_events()
    [notice] = notices(world, SecurityChange.SESSIONS_REVOKED)
    assert ALICE == notice.destination


def _sign_in() -> SignInCommand:
    return SignInCommand(identifier=ALICE, password=PASSWORD, client_address=CLIENT)


# The daily wrong-code budget ---------------------------------------------------------------------


async def _recover(world: World, code: str) -> None:
    await world.confirm_password_recovery(
        ConfirmPasswordRecoveryCommand(
            identifier=ALICE, code=code, new_password="a new long password", client_address=CLIENT
        )
    )


async def _spend_the_anyone_budget(world: World) -> None:
    """Twenty wrong recovery codes over four challenges, each locked by five (a minute
    apart, under the per-client limit)."""
    for _ in range(4):
        world.clock.advance(timedelta(minutes=1))
        await world.request_password_recovery(
            RequestPasswordRecoveryCommand(identifier=ALICE, client_address=CLIENT)
        )
        for _ in range(5):
            with pytest.raises(InvalidCode):
                await _recover(world, "999999")


async def test_a_locked_challenge_withdraws_its_unsent_message(world: World) -> None:
    await world.signed_up(ALICE)
    await world.request_password_recovery(
        RequestPasswordRecoveryCommand(identifier=ALICE, client_address=CLIENT)
    )

    for _ in range(5):
        with pytest.raises(InvalidCode):
            await _recover(world, "999999")

    [message] = world.messages(Purpose.PASSWORD_RECOVERY)
    assert (State.DEAD_LETTERED, FailureClass.CHALLENGE_LOCKED) == (
        message.state,
        message.dead_letter_reason,
    )


async def test_the_budget_refuses_even_the_right_code_and_tells_the_owner_once(
    world: World,
) -> None:
    await world.signed_up(ALICE)
    await _spend_the_anyone_budget(world)
    await world.request_password_recovery(
        RequestPasswordRecoveryCommand(identifier=ALICE, client_address=CLIENT)
    )
    right = world.last_secret(Purpose.PASSWORD_RECOVERY)

    with pytest.raises(InvalidCode):
        await _recover(world, right)

    exhausted = [
        n
        for n in notices(world)
        if n.params["change"] == SecurityChange.WRONG_CODE_BUDGET_EXHAUSTED
    ]
    assert [ALICE] == [n.destination for n in exhausted]
    [budget] = world.db.tables.code_budgets.values()
    assert 20 == budget.wrong_codes
    # The refused right code spent nothing: the challenge is still open, with no wrong try.
    [challenge] = [c for c in world.db.tables.challenges.values() if c.is_open(world.clock.now())]
    assert 0 == challenge.failed_attempts
    world.clock.advance(timedelta(days=1))
    await world.request_password_recovery(
        RequestPasswordRecoveryCommand(identifier=ALICE, client_address=CLIENT)
    )
    await _recover(world, world.last_secret(Purpose.PASSWORD_RECOVERY))


async def test_an_outsider_who_spends_the_budget_leaves_the_owners_step_up_alone(
    world: World,
) -> None:
    principal = await world.signed_up(ALICE)
    await _spend_the_anyone_budget(world)

    assert await world.elevated(principal)
