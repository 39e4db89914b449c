"""Organizations and invitations: permission, pending and send limits, revoke, reissue, accept."""

from __future__ import annotations

from datetime import timedelta
from uuid import UUID

import attrs
import pytest

from outbox.application.identity.errors import (
    InvalidToken,
    InvitationLimitReached,
    InvitationNotPending,
    MissingPermission,
    NotFound,
    RateLimited,
)
from outbox.application.identity.invite_member import InvitationReceipt, InviteMemberCommand
from outbox.application.identity.principal import Principal
from outbox.application.identity.revoke_invitation import RevokeInvitationCommand
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import State
from outbox.domain.identity.invitations import InvitationLimits, InvitationState
from outbox.domain.identity.organizations import Permission
from outbox.domain.identity.rate_limits import RateLimit
from outbox.domain.purposes import Purpose
from tests.unit.application.identity.world import CLIENT, World

GUEST = "guest@example.com"


async def invite(
    world: World, who: Principal, organization_id: UUID, email: str = GUEST
) -> InvitationReceipt:
    return await world.invite_member(
        InviteMemberCommand(
            identity_id=who.identity_id,
            organization_id=organization_id,
            email=email,
            client_address=CLIENT,
        )
    )


async def test_the_founder_may_invite_and_the_token_travels_sealed(world: World) -> None:
    founder = await world.signed_up("founder@example.com")
    org = await world.organization(founder, "Acme")

    receipt = await invite(world, founder, org)

    [message] = world.messages(Purpose.INVITATION)
    invitation = world.db.tables.invitations[receipt.invitation_id]
    assert receipt.invitation_id == message.subject_id
    assert invitation.expires_at == message.expires_at == receipt.expires_at
    assert {"organization_name": "Acme"} == dict(message.params)
    assert GUEST == message.destination
    token = world.secret_of(message)
    assert token not in invitation.token_digest
    assert (
        Permission.MANAGE_ACCOUNT
        in world.db.tables.memberships[(org, founder.identity_id)].permissions
    )


async def test_a_non_member_is_refused_whether_or_not_the_organization_exists(
    world: World,
) -> None:
    founder = await world.signed_up("founder@example.com")
    stranger = await world.signed_up("stranger@example.com")
    org = await world.organization(founder)

    for organization_id in (org, UUID(int=42)):
        with pytest.raises(MissingPermission):
            await invite(world, stranger, organization_id)
    assert [] == world.messages(Purpose.INVITATION)


async def test_a_member_without_the_permission_is_refused(world: World) -> None:
    founder = await world.signed_up("founder@example.com")
    member = await world.signed_up("member@example.com")
    org = await world.organization(founder)
    await invite(world, founder, org, "member@example.com")
    await world.accept(member, world.last_secret(Purpose.INVITATION))

    with pytest.raises(MissingPermission):
        await invite(world, member, org)


async def test_the_pending_limit_refuses_one_more_invitation(world: World) -> None:
    founder = await world.signed_up("founder@example.com")
    org = await world.organization(founder)
    limited = attrs.evolve(
        world.invite_member, invitation_limits=InvitationLimits(pending_per_organization=2)
    )
    for n in range(2):
        await limited(
            InviteMemberCommand(
                identity_id=founder.identity_id,
                organization_id=org,
                email=f"g{n}@example.com",
                client_address=CLIENT,
            )
        )

    with pytest.raises(InvitationLimitReached):
        await limited(
            InviteMemberCommand(
                identity_id=founder.identity_id,
                organization_id=org,
                email="g9@example.com",
                client_address=CLIENT,
            )
        )
    assert 2 == len(world.messages(Purpose.INVITATION))


async def test_sends_per_organization_are_limited(world: World) -> None:
    world.policy = attrs.evolve(
        world.policy, invitations_per_organization=RateLimit(limit=2, window=timedelta(hours=1))
    )
    founder = await world.signed_up("founder@example.com")
    org = await world.organization(founder)
    await invite(world, founder, org, "a@example.com")
    await invite(world, founder, org, "b@example.com")

    with pytest.raises(RateLimited):
        await invite(world, founder, org, "c@example.com")


async def test_sends_per_address_are_limited_per_organization(world: World) -> None:
    world.policy = attrs.evolve(
        world.policy, invitations_per_address=RateLimit(limit=2, window=timedelta(days=1))
    )
    founder = await world.signed_up("founder@example.com")
    orgs = [await world.organization(founder, f"Org {n}") for n in range(2)]
    await invite(world, founder, orgs[0])
    world.clock.advance(timedelta(hours=1))
    await invite(world, founder, orgs[0])

    with pytest.raises(RateLimited) as caught:
        await invite(world, founder, orgs[0])
    await invite(world, founder, orgs[1])
    assert timedelta(hours=23) == caught.value.retry_after  # the first send leaves the window


async def test_two_organizations_inviting_one_address_both_stay_sendable(world: World) -> None:
    founder = await world.signed_up("founder@example.com")
    first = await world.organization(founder, "First")
    second = await world.organization(founder, "Second")

    await invite(world, founder, first)
    await invite(world, founder, second)

    messages = world.messages(Purpose.INVITATION)
    assert [State.PENDING, State.PENDING] == [m.state for m in messages]


async def test_revoking_withdraws_the_unsent_message(world: World) -> None:
    founder = await world.signed_up("founder@example.com")
    org = await world.organization(founder)
    receipt = await invite(world, founder, org)
    token = world.last_secret(Purpose.INVITATION)

    await world.revoke_invitation(
        RevokeInvitationCommand(
            identity_id=founder.identity_id,
            organization_id=org,
            invitation_id=receipt.invitation_id,
        )
    )

    [message] = world.messages(Purpose.INVITATION)
    assert FailureClass.INVITATION_REVOKED == message.dead_letter_reason
    guest = await world.signed_up(GUEST)
    with pytest.raises(InvalidToken):
        await world.accept(guest, token)
    with pytest.raises(InvitationNotPending):
        await world.revoke_invitation(
            RevokeInvitationCommand(
                identity_id=founder.identity_id,
                organization_id=org,
                invitation_id=receipt.invitation_id,
            )
        )


async def test_revoking_an_invitation_of_another_organization_is_not_found(
    world: World,
) -> None:
    founder = await world.signed_up("founder@example.com")
    mine = await world.organization(founder, "Mine")
    other = await world.organization(founder, "Other")
    receipt = await invite(world, founder, other)

    with pytest.raises(NotFound):
        await world.revoke_invitation(
            RevokeInvitationCommand(
                identity_id=founder.identity_id,
                organization_id=mine,
                invitation_id=receipt.invitation_id,
            )
        )


async def test_inviting_the_same_address_again_reissues(world: World) -> None:
    founder = await world.signed_up("founder@example.com")
    org = await world.organization(founder)
    first = await invite(world, founder, org)
    old_token = world.last_secret(Purpose.INVITATION)

    second = await invite(world, founder, org)

    old, new = world.messages(Purpose.INVITATION)
    assert FailureClass.INVITATION_REVOKED == old.dead_letter_reason
    assert State.PENDING == new.state
    assert InvitationState.REVOKED == world.db.tables.invitations[first.invitation_id].state
    assert InvitationState.PENDING == world.db.tables.invitations[second.invitation_id].state
    guest = await world.signed_up(GUEST)
    with pytest.raises(InvalidToken):
        await world.accept(guest, old_token)


async def test_acceptance_makes_a_member_once(world: World) -> None:
    founder = await world.signed_up("founder@example.com")
    org = await world.organization(founder)
    await invite(world, founder, org)
    token = world.last_secret(Purpose.INVITATION)
    guest = await world.signed_up(GUEST)

    assert org == await world.accept(guest, token)

    membership = world.db.tables.memberships[(org, guest.identity_id)]
    assert frozenset() == membership.permissions
    with pytest.raises(InvalidToken):
        await world.accept(guest, token)


async def test_an_expired_invitation_cannot_be_accepted(world: World) -> None:
    founder = await world.signed_up("founder@example.com")
    org = await world.organization(founder)
    await invite(world, founder, org)
    token = world.last_secret(Purpose.INVITATION)
    guest = await world.signed_up(GUEST)
    world.clock.advance(timedelta(days=7))

    with pytest.raises(InvalidToken):
        await world.accept(guest, token)
