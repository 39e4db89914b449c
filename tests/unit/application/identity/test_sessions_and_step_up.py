"""Signing in, adding a sign-in method, and stepping up."""

from __future__ import annotations

from datetime import timedelta

import pytest

from outbox.application.identity.confirm_sign_in_method import ConfirmSignInMethodCommand
from outbox.application.identity.confirm_step_up import ConfirmStepUpCommand
from outbox.application.identity.errors import InvalidCode, InvalidCredentials, Unauthenticated
from outbox.application.identity.request_sign_in_method import RequestSignInMethodCommand
from outbox.application.identity.request_sign_up import RequestSignUpCommand
from outbox.application.identity.request_step_up import RequestStepUpCommand
from outbox.application.identity.sign_in import SignInCommand
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import State
from outbox.domain.identity.tokens import token_digest
from outbox.domain.purposes import Purpose
from tests.unit.application.identity.world import CLIENT, PASSWORD, World


async def test_signing_in_stores_only_the_digest_of_the_bearer_token(world: World) -> None:
    principal = await world.signed_up()

    [session] = world.db.tables.sessions.values()
    assert principal.session_id == session.id
    assert session.token_digest not in world.secrets.issued
    assert any(token_digest(t) == session.token_digest for t in world.secrets.issued)


@pytest.mark.parametrize(
    ("identifier", "password"),
    [
        ("alice@example.com", "wrong password!"),
        ("nobody@example.com", PASSWORD),
        ("not an identifier", PASSWORD),
    ],
)
async def test_wrong_passwords_and_unknown_identifiers_get_one_answer(
    world: World, identifier: str, password: str
) -> None:
    await world.signed_up("alice@example.com")

    with pytest.raises(InvalidCredentials):
        await world.sign_in(
            SignInCommand(identifier=identifier, password=password, client_address=CLIENT)
        )


async def test_an_unverified_sign_up_cannot_sign_in(world: World) -> None:
    await world.request_sign_up(
        RequestSignUpCommand(identifier="bob@example.com", client_address=CLIENT)
    )

    with pytest.raises(InvalidCredentials):
        await world.sign_in(
            SignInCommand(identifier="bob@example.com", password=PASSWORD, client_address=CLIENT)
        )


async def test_an_expired_session_no_longer_authenticates(world: World) -> None:
    await world.signed_up()
    token = world.secrets.issued[-1]
    world.clock.advance(timedelta(hours=12))

    with pytest.raises(Unauthenticated):
        await world.authenticate(token)


async def test_adding_a_phone_number_verifies_it_for_the_caller(world: World) -> None:
    principal = await world.signed_up()
    phone = "+34612345678"

    receipt = await world.request_sign_in_method(
        RequestSignInMethodCommand(
            principal=principal,
            elevation_token=await world.elevated(principal),
            identifier=phone,
            client_address=CLIENT,
        )
    )
    [message] = world.messages(Purpose.ADD_SIGN_IN_METHOD)
    await world.confirm_sign_in_method(
        ConfirmSignInMethodCommand(
            identity_id=principal.identity_id,
            identifier=phone,
            code=world.secret_of(message),
            client_address=CLIENT,
        )
    )

    assert message.expires_at == receipt.challenge_expires_at
    assert "sms" == message.channel
    login = world.db.tables.logins[phone]
    assert principal.identity_id == login.identity_id
    assert login.is_verified
    [message] = world.messages(Purpose.ADD_SIGN_IN_METHOD)
    assert FailureClass.CHALLENGE_CONSUMED == message.dead_letter_reason


async def test_adding_someone_elses_identifier_sends_nothing(world: World) -> None:
    await world.signed_up("bob@example.com")
    principal = await world.signed_up("alice@example.com")

    await world.request_sign_in_method(
        RequestSignInMethodCommand(
            principal=principal,
            elevation_token=await world.elevated(principal),
            identifier="bob@example.com",
            client_address=CLIENT,
        )
    )

    assert [] == world.messages(Purpose.ADD_SIGN_IN_METHOD)


async def test_step_up_sends_its_code_only_through_the_committed_outbox(world: World) -> None:
    principal = await world.signed_up()
    command = RequestStepUpCommand(principal=principal, client_address=CLIENT)
    world.db.faults.errors["commit"] = RuntimeError("commit failed")

    with pytest.raises(RuntimeError):
        await world.request_step_up(command)

    assert [] == world.messages(Purpose.STEP_UP)
    del world.db.faults.errors["commit"]
    receipt = await world.request_step_up(command)
    [message] = world.messages(Purpose.STEP_UP)
    assert "alice@example.com" == message.destination
    assert message.expires_at == receipt.challenge_expires_at


async def test_step_up_confirmation_grants_a_short_elevation_stored_as_a_digest(
    world: World,
) -> None:
    principal = await world.signed_up()
    await world.request_step_up(RequestStepUpCommand(principal=principal, client_address=CLIENT))

    grant = await world.confirm_step_up(
        ConfirmStepUpCommand(
            principal=principal,
            code=world.last_secret(Purpose.STEP_UP),
            client_address=CLIENT,
        )
    )

    [elevation] = world.db.tables.elevations.values()
    assert world.clock.now() + timedelta(minutes=5) == grant.expires_at
    assert token_digest(grant.token) == elevation.token_digest
    assert principal.session_id == elevation.session_id
    [message] = world.messages(Purpose.STEP_UP)
    assert State.DEAD_LETTERED == message.state


async def test_step_up_with_a_wrong_code_grants_nothing(world: World) -> None:
    principal = await world.signed_up()
    await world.request_step_up(RequestStepUpCommand(principal=principal, client_address=CLIENT))

    with pytest.raises(InvalidCode):
        await world.confirm_step_up(
            ConfirmStepUpCommand(principal=principal, code="999999", client_address=CLIENT)
        )

    assert {} == world.db.tables.elevations


async def test_a_password_changed_during_the_check_refuses_the_session(world: World) -> None:
    """A recovery that lands while the old password is being verified wins the race."""
    await world.signed_up()
    sessions_before = len(world.db.tables.sessions)
    identity_id = next(iter(world.db.tables.identities))
    original_verify = world.hasher.verify

    def verify_then_change(secret: str, hashed: str) -> bool:
        world.db.tables.passwords[identity_id] = world.hasher.hash("a different password")
        return original_verify(secret, hashed)

    object.__setattr__(world, "hasher", _Hasher(world.hasher, verify_then_change))

    with pytest.raises(InvalidCredentials):
        await world.sign_in(
            SignInCommand(identifier="alice@example.com", password=PASSWORD, client_address=CLIENT)
        )
    assert sessions_before == len(world.db.tables.sessions)


class _Hasher:
    """The real hasher with ``verify`` replaced."""

    def __init__(self, inner: object, verify: object) -> None:
        self._inner = inner
        self.verify = verify

    def hash(self, secret: str) -> str:
        return self._inner.hash(secret)  # type: ignore[attr-defined,no-any-return]
