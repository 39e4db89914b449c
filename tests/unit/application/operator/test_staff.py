"""Staff membership and the acting staff member, with fakes."""

from __future__ import annotations

from datetime import timedelta

import pytest

from outbox.application.errors import InvalidField
from outbox.application.identity.principal import Principal
from outbox.application.operator.errors import StaffIdentityNotFound
from outbox.application.operator.grant_staff import GrantStaffCommand
from outbox.application.operator.require_elevation import ElevationCheck
from outbox.application.operator.revoke_staff import RevokeStaffCommand
from outbox.application.staff import StaffActor, StepUpRequired
from outbox.domain.identity.sessions import Elevation
from outbox.domain.identity.tokens import token_digest
from tests.unit.application.operator.world import STAFF, OperatorWorld


async def test_grant_and_revoke_report_the_change(world: OperatorWorld):
    identity_id = world.ids.new_id()
    world.store.emails[STAFF] = identity_id

    granted = await world.grant_staff(GrantStaffCommand(email="staff@EXAMPLE.com"))
    revoked = await world.revoke_staff(RevokeStaffCommand(email=STAFF))

    assert (identity_id, True, True) == (granted.identity_id, granted.changed, revoked.changed)
    assert ["operator.staff.granted", "operator.staff.revoked"] == [
        e.name for e in world.telemetry.events
    ]
    assert STAFF not in repr(world.telemetry.events)


async def test_a_malformed_email_is_refused(world: OperatorWorld):
    with pytest.raises(InvalidField):
        await world.grant_staff(GrantStaffCommand(email="not-an-address"))


async def test_the_acting_staff_member_is_named_by_email(world: OperatorWorld):
    actor = world.staff()

    assert StaffActor(identity_id=actor.identity_id) == await world.resolve_staff_member(STAFF)
    with pytest.raises(StaffIdentityNotFound):
        await world.resolve_staff_member("nobody@example.com")


def _elevated(world: OperatorWorld, *, lifetime: timedelta = timedelta(minutes=5)) -> Principal:
    principal = Principal(
        identity_id=world.ids.new_id(),
        session_id=world.ids.new_id(),
        session_expires_at=world.now() + timedelta(hours=1),
    )
    elevation = Elevation.grant(
        id=world.ids.new_id(),
        session_id=principal.session_id,
        identity_id=principal.identity_id,
        session_expires_at=principal.session_expires_at,
        token_digest=token_digest("elevation-token"),
        now=world.now(),
        lifetime=lifetime,
    )
    world.identity.tables.elevations[elevation.id] = elevation
    return principal


async def test_a_fresh_elevation_of_this_session_names_the_caller(world: OperatorWorld):
    principal = _elevated(world)

    assert StaffActor(
        identity_id=principal.identity_id, elevation_digest=token_digest("elevation-token")
    ) == await world.require_elevation(
        ElevationCheck(principal=principal, elevation_token="elevation-token")
    )


@pytest.mark.parametrize("token", [None, "", "another-token"])
async def test_no_or_an_unknown_elevation_token_needs_a_step_up(world: OperatorWorld, token):
    principal = _elevated(world)

    with pytest.raises(StepUpRequired):
        await world.require_elevation(ElevationCheck(principal=principal, elevation_token=token))


async def test_an_expired_elevation_needs_a_step_up(world: OperatorWorld):
    principal = _elevated(world)
    world.store.outbox.clock.advance(timedelta(minutes=6))

    with pytest.raises(StepUpRequired):
        await world.require_elevation(
            ElevationCheck(principal=principal, elevation_token="elevation-token")
        )


async def test_another_sessions_elevation_needs_a_step_up(world: OperatorWorld):
    principal = _elevated(world)
    other_session = Principal(
        identity_id=principal.identity_id,
        session_id=world.ids.new_id(),
        session_expires_at=principal.session_expires_at,
    )

    with pytest.raises(StepUpRequired):
        await world.require_elevation(
            ElevationCheck(principal=other_session, elevation_token="elevation-token")
        )
