"""Sign-up, its resend (same challenge, new code, older message withdrawn) and confirmation;
the route tells only when the challenge expires."""

from __future__ import annotations

from datetime import timedelta

import attrs
import pytest

from outbox.application.errors import InvalidField, StoreUnavailable
from outbox.application.identity.confirm_sign_up import ConfirmSignUpCommand
from outbox.application.identity.errors import InvalidCode, RateLimited
from outbox.application.identity.request_sign_up import RequestSignUpCommand
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import State
from outbox.domain.identity.challenges import ChallengeState
from outbox.domain.identity.rate_limits import Backoff
from outbox.domain.purposes import Purpose
from tests.unit.application.identity.world import CLIENT, PASSWORD, World

EMAIL = "alice@Example.COM"
CANONICAL = "alice@example.com"


def sign_up(identifier: str = EMAIL) -> RequestSignUpCommand:
    return RequestSignUpCommand(identifier=identifier, client_address=CLIENT)


def confirm(code: str, identifier: str = EMAIL, password: str = PASSWORD) -> ConfirmSignUpCommand:
    return ConfirmSignUpCommand(
        identifier=identifier, code=code, password=password, client_address=CLIENT
    )


async def test_sign_up_commits_the_challenge_and_its_sealed_code_together(world: World) -> None:
    receipt = await world.request_sign_up(sign_up())

    [challenge] = world.db.tables.challenges.values()
    [message] = world.messages()
    assert world.clock.now() + timedelta(minutes=10) == receipt.challenge_expires_at
    assert challenge.expires_at == receipt.challenge_expires_at
    assert Purpose.SIGN_UP == message.purpose
    assert CANONICAL == message.destination
    assert challenge.id == message.subject_id
    assert challenge.expires_at == message.expires_at
    code = world.secret_of(message)
    assert 6 == len(code)
    assert code not in challenge.code_hash
    assert world.hasher.verify(code, challenge.code_hash)
    assert 1 == world.db.commits


async def test_resend_keeps_the_challenge_with_a_new_code_and_supersedes_the_old_message(
    world: World,
) -> None:
    await world.request_sign_up(sign_up())
    first_code = world.last_secret(Purpose.SIGN_UP)
    world.clock.advance(timedelta(minutes=3))

    receipt = await world.request_sign_up(sign_up())

    [challenge] = world.db.tables.challenges.values()
    old, new = world.messages(Purpose.SIGN_UP)
    assert State.DEAD_LETTERED == old.state
    assert FailureClass.SUPERSEDED_BY_RESEND == old.dead_letter_reason
    assert State.PENDING == new.state
    assert challenge.id == new.subject_id == old.subject_id
    assert world.clock.now() + timedelta(minutes=10) == receipt.challenge_expires_at
    assert first_code != world.secret_of(new)
    assert not world.hasher.verify(first_code, challenge.code_hash)


async def test_a_failed_enqueue_rolls_back_the_challenge_and_the_account(world: World) -> None:
    world.db.faults.errors["enqueue"] = StoreUnavailable("57P01")

    with pytest.raises(StoreUnavailable):
        await world.request_sign_up(sign_up())

    assert {} == world.db.tables.challenges
    assert {} == world.db.tables.identities
    assert {} == world.db.tables.messages


async def test_a_failed_challenge_insert_enqueues_nothing(world: World) -> None:
    world.db.faults.errors["save_challenge"] = StoreUnavailable("40001")

    with pytest.raises(StoreUnavailable):
        await world.request_sign_up(sign_up())

    assert {} == world.db.tables.messages
    assert {} == world.db.tables.logins


async def test_a_verified_identifier_gets_the_same_answer_and_no_message(world: World) -> None:
    await world.signed_up(CANONICAL)
    sent = len(world.messages())

    receipt = await world.request_sign_up(sign_up())

    assert world.clock.now() + timedelta(minutes=10) == receipt.challenge_expires_at
    assert sent == len(world.messages())


@pytest.mark.parametrize("identifier", ["not an address", "0612345678"])
async def test_an_invalid_identifier_is_named(world: World, identifier: str) -> None:
    with pytest.raises(InvalidField) as caught:
        await world.request_sign_up(sign_up(identifier=identifier))
    assert "identifier" == caught.value.field
    assert {} == world.db.tables.messages


async def test_a_weak_password_at_the_confirmation_is_named_and_spends_no_code(
    world: World,
) -> None:
    await world.request_sign_up(sign_up())

    with pytest.raises(InvalidField) as caught:
        await world.confirm_sign_up(confirm(world.last_secret(Purpose.SIGN_UP), password="short"))

    assert "password" == caught.value.field
    [challenge] = world.db.tables.challenges.values()
    assert (ChallengeState.OPEN, 0) == (challenge.state, challenge.failed_attempts)


async def test_the_password_is_the_one_chosen_with_the_right_code(world: World) -> None:
    """Nothing a sign-up request carries reaches the account: the confirmer chooses."""
    await world.request_sign_up(sign_up())
    await world.request_sign_up(sign_up())  # anyone may ask again; it is only a resend

    await world.confirm_sign_up(
        confirm(world.last_secret(Purpose.SIGN_UP), password="the owner's own password")
    )

    [identity_id] = world.db.tables.identities
    assert world.hasher.verify("the owner's own password", world.db.tables.passwords[identity_id])


async def test_too_many_sign_ups_for_one_destination_are_refused_with_a_wait(
    world: World,
) -> None:
    world.policy = attrs.evolve(world.policy, per_destination=Backoff())
    await world.request_sign_up(sign_up())

    with pytest.raises(RateLimited) as caught:
        await world.request_sign_up(sign_up("ALICE@example.com"))
    assert timedelta(minutes=1) == caught.value.retry_after


async def test_the_right_code_verifies_the_identifier_and_cancels_unsent_messages(
    world: World,
) -> None:
    await world.request_sign_up(sign_up())

    await world.confirm_sign_up(confirm(world.last_secret(Purpose.SIGN_UP)))

    [challenge] = world.db.tables.challenges.values()
    [message] = world.messages()
    assert ChallengeState.CONSUMED == challenge.state
    assert world.db.tables.logins[CANONICAL].is_verified
    assert State.DEAD_LETTERED == message.state
    assert FailureClass.CHALLENGE_CONSUMED == message.dead_letter_reason


async def test_a_consumed_code_cannot_be_used_twice(world: World) -> None:
    await world.request_sign_up(sign_up())
    code = world.last_secret(Purpose.SIGN_UP)
    await world.confirm_sign_up(confirm(code))

    with pytest.raises(InvalidCode):
        await world.confirm_sign_up(confirm(code))


async def test_a_wrong_code_is_counted_even_though_it_is_refused(world: World) -> None:
    await world.request_sign_up(sign_up())

    with pytest.raises(InvalidCode):
        await world.confirm_sign_up(confirm("999999"))

    [challenge] = world.db.tables.challenges.values()
    assert 1 == challenge.failed_attempts
    assert ChallengeState.OPEN == challenge.state


async def test_five_wrong_codes_lock_the_challenge_against_the_right_one(world: World) -> None:
    await world.request_sign_up(sign_up())
    code = world.last_secret(Purpose.SIGN_UP)
    for _ in range(5):
        with pytest.raises(InvalidCode):
            await world.confirm_sign_up(confirm("999999"))

    with pytest.raises(InvalidCode):
        await world.confirm_sign_up(confirm(code))

    [challenge] = world.db.tables.challenges.values()
    assert ChallengeState.LOCKED == challenge.state
    assert not world.db.tables.logins[CANONICAL].is_verified


async def test_after_a_lock_the_same_route_opens_a_new_challenge(world: World) -> None:
    await world.request_sign_up(sign_up())
    for _ in range(5):
        with pytest.raises(InvalidCode):
            await world.confirm_sign_up(confirm("999999"))

    await world.request_sign_up(sign_up())
    await world.confirm_sign_up(confirm(world.last_secret(Purpose.SIGN_UP)))

    states = sorted(c.state for c in world.db.tables.challenges.values())
    assert [ChallengeState.CONSUMED, ChallengeState.LOCKED] == states


async def test_an_expired_challenge_refuses_the_right_code(world: World) -> None:
    await world.request_sign_up(sign_up())
    code = world.last_secret(Purpose.SIGN_UP)
    world.clock.advance(timedelta(minutes=10))

    with pytest.raises(InvalidCode):
        await world.confirm_sign_up(confirm(code))


async def test_after_expiry_the_same_route_replaces_the_challenge(world: World) -> None:
    await world.request_sign_up(sign_up())
    world.clock.advance(timedelta(minutes=11))

    await world.request_sign_up(sign_up())

    states = sorted(c.state for c in world.db.tables.challenges.values())
    assert [ChallengeState.CLOSED, ChallengeState.OPEN] == states
