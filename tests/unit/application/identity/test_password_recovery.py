"""Password recovery: anti-enumeration, failure hiding and confirmation."""

from __future__ import annotations

from datetime import timedelta

import attrs
import pytest

from outbox.application.errors import InvalidField, StoreUnavailable
from outbox.application.identity.confirm_password_recovery import ConfirmPasswordRecoveryCommand
from outbox.application.identity.errors import InvalidCode, Unauthenticated
from outbox.application.identity.request_password_recovery import RequestPasswordRecoveryCommand
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.identity.rate_limits import Backoff
from outbox.domain.purposes import Purpose
from tests.unit.application.identity.world import CLIENT, World

KNOWN = "alice@example.com"
UNKNOWN = "nobody@example.com"


def recover(identifier: str) -> RequestPasswordRecoveryCommand:
    return RequestPasswordRecoveryCommand(identifier=identifier, client_address=CLIENT)


async def test_a_known_identifier_gets_a_code(world: World) -> None:
    await world.signed_up(KNOWN)

    receipt = await world.request_password_recovery(recover(KNOWN))

    [message] = world.messages(Purpose.PASSWORD_RECOVERY)
    assert KNOWN == message.destination
    assert message.expires_at == receipt.challenge_expires_at


async def test_known_and_unknown_identifiers_get_the_same_receipt_and_calls(
    world: World,
) -> None:
    await world.signed_up(KNOWN)
    world.db.faults.calls.clear()

    known = await world.request_password_recovery(recover(KNOWN))
    known_calls = list(world.db.faults.calls)
    world.db.faults.calls.clear()
    unknown = await world.request_password_recovery(recover(UNKNOWN))

    assert known == unknown
    assert known_calls == world.db.faults.calls
    assert 1 == len(world.messages(Purpose.PASSWORD_RECOVERY))


async def test_a_resend_supersedes_the_unsent_code(world: World) -> None:
    await world.signed_up(KNOWN)
    await world.request_password_recovery(recover(KNOWN))
    world.clock.advance(timedelta(minutes=1))

    await world.request_password_recovery(recover(KNOWN))

    old, new = world.messages(Purpose.PASSWORD_RECOVERY)
    assert FailureClass.SUPERSEDED_BY_RESEND == old.dead_letter_reason
    assert old.subject_id == new.subject_id


@pytest.mark.parametrize("failing", ["open_recovery_if_known", "enqueue", "commit"])
async def test_a_failure_after_the_lookup_is_hidden_and_logged(world: World, failing: str) -> None:
    await world.signed_up(KNOWN)
    world.db.faults.errors[failing] = StoreUnavailable("57P01")

    receipt = await world.request_password_recovery(recover(KNOWN))

    assert world.clock.now() + timedelta(minutes=10) == receipt.challenge_expires_at
    assert [] == world.messages(Purpose.PASSWORD_RECOVERY)
    [event] = world.telemetry.named("identity.password_recovery.failed")
    assert "StoreUnavailable" == event.fields["error"]
    assert "57P01" == event.fields["code"]


@pytest.mark.parametrize("identifier", [KNOWN, UNKNOWN])
@pytest.mark.parametrize("failing", ["begin", "find_recovery_target"])
async def test_a_failure_before_the_lookup_surfaces_for_everyone(
    world: World, identifier: str, failing: str
) -> None:
    await world.signed_up(KNOWN)
    world.db.faults.errors[failing] = StoreUnavailable("08006")

    with pytest.raises(StoreUnavailable):
        await world.request_password_recovery(recover(identifier))


async def test_the_per_destination_pace_is_silent(world: World) -> None:
    await world.signed_up(KNOWN)
    world.limiter.paces.clear()  # the sign-up's send
    world.policy = attrs.evolve(world.policy, per_destination=Backoff())
    await world.request_password_recovery(recover(KNOWN))

    receipt = await world.request_password_recovery(recover(KNOWN))
    world.clock.advance(timedelta(minutes=1))
    await world.request_password_recovery(recover(KNOWN))

    assert world.clock.now() + timedelta(minutes=9) == receipt.challenge_expires_at
    assert 2 == len(world.telemetry.named("identity.password_recovery.requested"))
    assert 1 == len(world.telemetry.named("identity.password_recovery.destination_limited"))


async def test_confirmation_sets_the_password_and_ends_every_session(world: World) -> None:
    principal = await world.signed_up(KNOWN)
    token = world.secrets.issued[-1]
    await world.request_password_recovery(recover(KNOWN))

    await world.confirm_password_recovery(
        ConfirmPasswordRecoveryCommand(
            identifier=KNOWN,
            code=world.last_secret(Purpose.PASSWORD_RECOVERY),
            new_password="a brand new password",
            client_address=CLIENT,
        )
    )

    with pytest.raises(Unauthenticated):
        await world.authenticate(token)
    assert world.hasher.verify(
        "a brand new password", world.db.tables.passwords[principal.identity_id]
    )


async def test_confirmation_for_an_unknown_identifier_is_a_wrong_code(world: World) -> None:
    with pytest.raises(InvalidCode):
        await world.confirm_password_recovery(
            ConfirmPasswordRecoveryCommand(
                identifier=UNKNOWN,
                code="000001",
                new_password="a brand new password",
                client_address=CLIENT,
            )
        )


async def test_a_weak_new_password_names_its_field(world: World) -> None:
    with pytest.raises(InvalidField) as caught:
        await world.confirm_password_recovery(
            ConfirmPasswordRecoveryCommand(
                identifier=KNOWN, code="000001", new_password="short", client_address=CLIENT
            )
        )
    assert "newPassword" == caught.value.field


async def test_the_log_line_is_the_same_for_a_known_and_an_unknown_identifier(
    world: World,
) -> None:
    """Issue 29: the line carried ``known`` (and a challenge id for known ones only)."""
    await world.signed_up(KNOWN)
    await world.request_password_recovery(recover(KNOWN))
    await world.request_password_recovery(recover(UNKNOWN))

    known, unknown = world.telemetry.named("identity.password_recovery.requested")
    assert known.fields.keys() == unknown.fields.keys() == {"destination"}
    assert known.level == unknown.level
