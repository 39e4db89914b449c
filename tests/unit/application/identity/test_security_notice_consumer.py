"""The identity.security_notices consumer's handler: a delivered account event becomes one
security_notice per verified identifier, written in the delivery's transaction."""

from __future__ import annotations

from datetime import timedelta
from uuid import uuid4

import attrs
import pytest

from outbox.application.events.consumer_handlers import Reject
from outbox.application.identity.confirm_password_recovery import ConfirmPasswordRecoveryCommand
from outbox.application.identity.confirm_sign_in_method import ConfirmSignInMethodCommand
from outbox.application.identity.request_password_recovery import RequestPasswordRecoveryCommand
from outbox.application.identity.request_sign_in_method import RequestSignInMethodCommand
from outbox.application.identity.security_notice_consumer import SendSecurityNotices
from outbox.domain.delivery.messages import Message
from outbox.domain.events.domain_events import NewDomainEvent
from outbox.domain.identity.account_events import AccountEvent
from outbox.domain.purposes import Purpose
from tests.unit.application.identity.world import CLIENT, World, delivered_event

ALICE = "alice@example.com"
PHONE = "+34612345678"


def handler(world: World) -> SendSecurityNotices:
    return SendSecurityNotices(notices=world.notices, clock=world.clock)


async def handle(world: World, event: NewDomainEvent) -> list[Message]:
    """Deliver ``event`` to the handler in one committed transaction; return its notices."""
    before = {m.id for m in world.messages(Purpose.SECURITY_NOTICE)}
    async with world.db.begin() as uow:
        await handler(world)(uow, delivered_event(uuid4(), event))
        await uow.commit()
    return [m for m in world.messages(Purpose.SECURITY_NOTICE) if m.id not in before]


def the_event(world: World, kind: AccountEvent) -> NewDomainEvent:
    [event] = world.db.domain_events(kind)
    return event


async def _with_phone(world: World) -> None:
    principal = await world.signed_up(ALICE)
    elevation = await world.elevated(principal)
    await world.request_sign_in_method(
        RequestSignInMethodCommand(
            principal=principal, elevation_token=elevation, identifier=PHONE, client_address=CLIENT
        )
    )
    await world.confirm_sign_in_method(
        ConfirmSignInMethodCommand(
            identity_id=principal.identity_id,
            identifier=PHONE,
            code=world.last_secret(Purpose.ADD_SIGN_IN_METHOD),
            client_address=CLIENT,
        )
    )


async def test_a_verified_account_is_told_to_its_identifier(world: World) -> None:
    principal = await world.signed_up(ALICE)
    event = the_event(world, AccountEvent.ACCOUNT_VERIFIED)

    [notice] = await handle(world, event)

    assert (ALICE, principal.identity_id) == (notice.destination, notice.subject_id)
    assert {"change": "account_verified", "occurred_at": event.occurred_at.isoformat()} == dict(
        notice.params
    )
    assert notice.sealed_secret is None


async def test_an_added_method_is_told_only_to_the_identifiers_verified_before_it(
    world: World,
) -> None:
    await _with_phone(world)
    event = the_event(world, AccountEvent.SIGN_IN_METHOD_ADDED)
    world.clock.advance(timedelta(minutes=3))  # delivered later: the notice says when it happened

    [notice] = await handle(world, event)

    assert ALICE == notice.destination
    assert "+34***78" == notice.params["identifier"]
    assert event.occurred_at.isoformat() == notice.params["occurred_at"]
    assert world.clock.now() == notice.created_at


async def test_a_password_reset_is_told_to_every_verified_identifier(world: World) -> None:
    await _with_phone(world)
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

    notices = await handle(world, the_event(world, AccountEvent.PASSWORD_RESET))

    assert [(ALICE, "email"), (PHONE, "sms")] == [(n.destination, n.channel) for n in notices]
    assert {"password_reset"} == {n.params["change"] for n in notices}


async def test_revoked_sessions_are_told_to_every_verified_identifier(world: World) -> None:
    principal = await world.signed_up(ALICE)
    await world.revoke_sessions(principal)

    [notice] = await handle(world, the_event(world, AccountEvent.SESSIONS_REVOKED))

    assert ("sessions_revoked", ALICE) == (notice.params["change"], notice.destination)


@pytest.mark.parametrize(
    "change",
    [
        {"contract_version": 2},
        {"event_type": "identity.account_deleted"},
        {"payload": {"change": "account_verified"}},
        {"payload": {"identity_id": "not a uuid"}},
    ],
    ids=["version 2", "another type", "no identity", "a bad identity"],
)
async def test_an_event_it_cannot_read_is_refused_and_enqueues_nothing(
    world: World, change: dict[str, object]
) -> None:
    await world.signed_up(ALICE)
    event = attrs.evolve(the_event(world, AccountEvent.ACCOUNT_VERIFIED), **change)

    with pytest.raises(Reject, match="unreadable_account_event"):
        await handle(world, event)

    assert [] == world.messages(Purpose.SECURITY_NOTICE)


async def test_an_added_method_without_its_masked_identifier_is_refused(world: World) -> None:
    await _with_phone(world)
    event = the_event(world, AccountEvent.SIGN_IN_METHOD_ADDED)
    payload = {k: v for k, v in event.payload.items() if k != "identifier"}

    with pytest.raises(Reject, match="unreadable_account_event"):
        await handle(world, attrs.evolve(event, payload=payload))
