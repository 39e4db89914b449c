"""Magic links: anti-enumeration request, single-use expiring redemption."""

from __future__ import annotations

from datetime import timedelta

import pytest

from outbox.application.errors import InvalidField, StoreUnavailable
from outbox.application.identity.errors import InvalidToken, RateLimited
from outbox.application.identity.redeem_magic_link import RedeemMagicLinkCommand
from outbox.application.identity.request_magic_link import RequestMagicLinkCommand
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.purposes import Purpose
from tests.unit.application.identity.world import CLIENT, World

KNOWN = "alice@example.com"


def ask(email: str) -> RequestMagicLinkCommand:
    return RequestMagicLinkCommand(email=email, client_address=CLIENT)


def redeem(token: str) -> RedeemMagicLinkCommand:
    return RedeemMagicLinkCommand(token=token, client_address=CLIENT)


async def test_a_known_email_gets_a_link_token_and_unknown_ones_the_same_receipt(
    world: World,
) -> None:
    await world.signed_up(KNOWN)
    world.db.faults.calls.clear()

    known = await world.request_magic_link(ask(KNOWN))
    known_calls = list(world.db.faults.calls)
    world.db.faults.calls.clear()
    unknown = await world.request_magic_link(ask("nobody@example.com"))

    assert known == unknown
    assert known_calls == world.db.faults.calls
    [message] = world.messages(Purpose.MAGIC_LINK)
    assert KNOWN == message.destination
    assert message.expires_at == known.challenge_expires_at


async def test_a_phone_only_account_is_not_found_by_email(world: World) -> None:
    await world.signed_up("+34612345678")

    with pytest.raises(InvalidField):
        await world.request_magic_link(ask("+34612345678"))


async def test_redeeming_starts_a_session_and_works_once(world: World) -> None:
    principal = await world.signed_up(KNOWN)
    await world.request_magic_link(ask(KNOWN))
    token = world.last_secret(Purpose.MAGIC_LINK)

    grant = await world.redeem_magic_link(redeem(token))

    assert principal.identity_id == (await world.authenticate(grant.token)).identity_id
    [message] = world.messages(Purpose.MAGIC_LINK)
    assert FailureClass.CHALLENGE_CONSUMED == message.dead_letter_reason
    with pytest.raises(InvalidToken):
        await world.redeem_magic_link(redeem(token))


async def test_a_resend_replaces_the_token_and_supersedes_the_unsent_link(world: World) -> None:
    await world.signed_up(KNOWN)
    await world.request_magic_link(ask(KNOWN))
    old_token = world.last_secret(Purpose.MAGIC_LINK)

    await world.request_magic_link(ask(KNOWN))

    old, new = world.messages(Purpose.MAGIC_LINK)
    assert FailureClass.SUPERSEDED_BY_RESEND == old.dead_letter_reason
    assert old.subject_id == new.subject_id
    with pytest.raises(InvalidToken):
        await world.redeem_magic_link(redeem(old_token))
    await world.redeem_magic_link(redeem(world.secret_of(new)))


async def test_an_expired_link_is_refused(world: World) -> None:
    await world.signed_up(KNOWN)
    await world.request_magic_link(ask(KNOWN))
    world.clock.advance(timedelta(minutes=15))

    with pytest.raises(InvalidToken):
        await world.redeem_magic_link(redeem(world.last_secret(Purpose.MAGIC_LINK)))


async def test_a_failed_enqueue_is_hidden_for_a_known_email(world: World) -> None:
    await world.signed_up(KNOWN)
    world.db.faults.errors["enqueue"] = StoreUnavailable("53300")

    receipt = await world.request_magic_link(ask(KNOWN))

    assert world.clock.now() + timedelta(minutes=15) == receipt.challenge_expires_at
    assert [] == world.messages(Purpose.MAGIC_LINK)
    assert {} == world.db.tables.magic_links
    assert 1 == len(world.telemetry.named("identity.magic_link.failed"))


async def test_the_client_address_limit_is_a_429_for_everyone(world: World) -> None:
    for _ in range(world.policy.per_client.limit):
        await world.request_magic_link(ask("nobody@example.com"))

    with pytest.raises(RateLimited):
        await world.request_magic_link(ask(KNOWN))
