"""The identity module as a producer: each account change appends its domain event
in the change's own transaction, keyed on the change, with no identifier, code or token in it."""

from __future__ import annotations

import json
from uuid import UUID

import pytest

from outbox.application.errors import StoreUnavailable
from outbox.application.identity.confirm_password_recovery import ConfirmPasswordRecoveryCommand
from outbox.application.identity.confirm_sign_in_method import ConfirmSignInMethodCommand
from outbox.application.identity.confirm_sign_up import ConfirmSignUpCommand
from outbox.application.identity.errors import InvalidCode
from outbox.application.identity.principal import Principal
from outbox.application.identity.request_password_recovery import RequestPasswordRecoveryCommand
from outbox.application.identity.request_sign_in_method import RequestSignInMethodCommand
from outbox.application.identity.request_sign_up import RequestSignUpCommand
from outbox.application.identity.sign_in import SignInCommand
from outbox.domain.events.domain_events import NewDomainEvent
from outbox.domain.identity.account_events import AccountEvent
from outbox.domain.purposes import Purpose
from tests.unit.application.identity.world import CLIENT, PASSWORD, World

ALICE = "alice@example.com"
PHONE = "+34612345678"
NEW_PASSWORD = "a new long password"
PLATFORM = UUID(int=0)


def events(world: World, kind: AccountEvent | None = None) -> list[NewDomainEvent]:
    return world.db.domain_events(kind)


def assert_nothing_secret(world: World, event: NewDomainEvent) -> None:
    """No identifier, code, token or password anywhere in the event: the payload holds ids
    (whose digits a test code may well repeat), the change, times, and a masked identifier."""
    text = json.dumps(dict(event.payload)) + event.idempotency_key
    for secret in (ALICE, PHONE, PASSWORD, NEW_PASSWORD):
        assert secret not in text
    secrets = set(world.secrets.issued)
    for value in (*event.payload.values(), event.idempotency_key.split(":", 1)[1]):
        assert str(value) not in secrets
        if isinstance(value, str) and not _is_uuid(value):
            assert not any(secret in value for secret in secrets)


def _is_uuid(value: str) -> bool:
    try:
        UUID(value)
    except ValueError:
        return False
    return True


async def _add_phone(world: World, principal: Principal) -> str:
    elevation = await world.elevated(principal)
    await world.request_sign_in_method(
        RequestSignInMethodCommand(
            principal=principal, elevation_token=elevation, identifier=PHONE, client_address=CLIENT
        )
    )
    return world.last_secret(Purpose.ADD_SIGN_IN_METHOD)


def _confirm_phone(principal: Principal, code: str) -> ConfirmSignInMethodCommand:
    return ConfirmSignInMethodCommand(
        identity_id=principal.identity_id, identifier=PHONE, code=code, client_address=CLIENT
    )


def _recover(code: str) -> ConfirmPasswordRecoveryCommand:
    return ConfirmPasswordRecoveryCommand(
        identifier=ALICE, code=code, new_password=NEW_PASSWORD, client_address=CLIENT
    )


async def test_a_confirmed_sign_up_appends_account_verified_keyed_on_its_challenge(
    world: World,
) -> None:
    await world.request_sign_up(RequestSignUpCommand(identifier=ALICE, client_address=CLIENT))
    code = world.last_secret(Purpose.SIGN_UP)
    [challenge] = world.db.tables.challenges.values()

    with pytest.raises(InvalidCode):
        await world.confirm_sign_up(
            ConfirmSignUpCommand(
                identifier=ALICE, code="999999", password=PASSWORD, client_address=CLIENT
            )
        )
    assert [] == events(world)
    await world.confirm_sign_up(
        ConfirmSignUpCommand(identifier=ALICE, code=code, password=PASSWORD, client_address=CLIENT)
    )

    [event] = events(world)
    assert (PLATFORM, "identity.account_verified", 1, "identity") == (
        event.organization_id,
        event.event_type,
        event.contract_version,
        event.aggregate_type,
    )
    assert str(challenge.identity_id) == event.aggregate_id
    assert f"account_verified:{challenge.id}" == event.idempotency_key
    assert {
        "identity_id": str(challenge.identity_id),
        "change": "account_verified",
        "occurred_at": world.clock.now().isoformat(),
        "challenge_id": str(challenge.id),
        "channel": "email",
    } == dict(event.payload)
    assert world.clock.now() == event.occurred_at
    assert_nothing_secret(world, event)


async def test_an_added_method_appends_its_event_with_the_identifier_masked(world: World) -> None:
    principal = await world.signed_up(ALICE)
    code = await _add_phone(world, principal)

    await world.confirm_sign_in_method(_confirm_phone(principal, code))

    [event] = events(world, AccountEvent.SIGN_IN_METHOD_ADDED)
    assert str(principal.identity_id) == event.aggregate_id
    assert "+34***78" == event.payload["identifier"]
    assert "sms" == event.payload["channel"]
    assert event.idempotency_key == f"sign_in_method_added:{event.payload['challenge_id']}"
    assert_nothing_secret(world, event)


async def test_a_password_reset_appends_its_event_and_an_unknown_identifier_appends_none(
    world: World,
) -> None:
    principal = await world.signed_up(ALICE)
    await world.request_password_recovery(
        RequestPasswordRecoveryCommand(identifier="nobody@example.com", client_address=CLIENT)
    )
    with pytest.raises(InvalidCode):
        await world.confirm_password_recovery(
            ConfirmPasswordRecoveryCommand(
                identifier="nobody@example.com",
                code="123456",
                new_password=NEW_PASSWORD,
                client_address=CLIENT,
            )
        )
    assert [] == events(world, AccountEvent.PASSWORD_RESET)
    await world.request_password_recovery(
        RequestPasswordRecoveryCommand(identifier=ALICE, client_address=CLIENT)
    )
    code = world.last_secret(Purpose.PASSWORD_RECOVERY)

    await world.confirm_password_recovery(_recover(code))

    [event] = events(world, AccountEvent.PASSWORD_RESET)
    assert str(principal.identity_id) == event.payload["identity_id"]
    assert 1 == event.payload["sessions_revoked"]
    assert_nothing_secret(world, event)


async def test_revoking_every_session_appends_one_event_per_revocation(world: World) -> None:
    principal = await world.signed_up(ALICE)

    await world.revoke_sessions(principal)
    grant = await world.sign_in(
        SignInCommand(identifier=ALICE, password=PASSWORD, client_address=CLIENT)
    )
    again = await world.authenticate(grant.token)
    await world.revoke_sessions(again)

    first, second = events(world, AccountEvent.SESSIONS_REVOKED)
    assert (str(principal.session_id), 1) == (
        first.payload["session_id"],
        first.payload["sessions_revoked"],
    )
    assert first.idempotency_key == f"sessions_revoked:{first.payload['revocation_id']}"
    assert first.idempotency_key != second.idempotency_key
    assert_nothing_secret(world, first)


async def test_the_event_commits_with_its_change_or_not_at_all(world: World) -> None:
    principal = await world.signed_up(ALICE)
    world.db.faults.errors["commit"] = StoreUnavailable("08006")

    with pytest.raises(StoreUnavailable):
        await world.revoke_sessions(principal)

    assert [] == events(world, AccountEvent.SESSIONS_REVOKED)
    assert principal == await world.authenticate(world.secrets.issued[-1])


async def test_a_refused_append_keeps_the_change_from_happening(world: World) -> None:
    await world.signed_up(ALICE)
    await world.request_password_recovery(
        RequestPasswordRecoveryCommand(identifier=ALICE, client_address=CLIENT)
    )
    code = world.last_secret(Purpose.PASSWORD_RECOVERY)
    world.db.faults.errors["append"] = StoreUnavailable("40001")

    with pytest.raises(StoreUnavailable):
        await world.confirm_password_recovery(_recover(code))

    # The password, the sessions and the challenge are as they were; the code still works.
    del world.db.faults.errors["append"]
    await world.confirm_password_recovery(_recover(code))
    assert 1 == len(events(world, AccountEvent.PASSWORD_RESET))


async def test_the_same_change_appended_twice_is_one_event(world: World) -> None:
    await world.signed_up(ALICE)
    [event] = events(world)

    async with world.db.begin() as uow:
        first = next(iter(uow.events.tables.domain_events))
        assert first == await uow.events.append(event)
        await uow.commit()

    assert [event] == events(world)
