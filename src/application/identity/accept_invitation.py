"""Accept an invitation: the single-use token makes the signed-in caller a member."""

from __future__ import annotations

from uuid import UUID

import attrs

from outbox.application.identity.errors import InvalidToken, InvitationForAnotherAddress
from outbox.application.identity.ports import IdentityTransactions
from outbox.application.identity.request_limits import RequestLimits
from outbox.application.ports import Clock, Telemetry
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.identity.errors import TokenNotUsable
from outbox.domain.identity.organizations import Membership
from outbox.domain.identity.tokens import token_digest

ROUTE = "invitation_acceptance"


@attrs.frozen(kw_only=True)
class AcceptInvitationCommand:
    """The signed-in caller and the token from the invitation link."""

    identity_id: UUID
    token: str = attrs.field(repr=False)
    client_address: str = attrs.field(repr=False)


@attrs.frozen(kw_only=True)
class AcceptInvitation:
    """Consumes the invitation, adds the membership, and withdraws any unsent message for it;
    only an account that holds the invited address as a verified identifier may."""

    transactions: IdentityTransactions
    limits: RequestLimits
    clock: Clock
    telemetry: Telemetry

    async def __call__(self, command: AcceptInvitationCommand) -> UUID:
        """The organization joined; raises InvalidToken, InvitationForAnotherAddress or
        RateLimited."""
        now = self.clock.now()
        await self.limits.client(ROUTE, command.client_address, now)
        async with self.transactions.begin() as uow:
            invitation = await uow.identity.find_invitation_by_token(token_digest(command.token))
            if invitation is None:
                raise InvalidToken
            try:
                accepted = invitation.accept(identity_id=command.identity_id, now=now)
            except TokenNotUsable:
                raise InvalidToken from None
            # A token that reached someone else (forwarded, leaked, phished) is not enough:
            # the account must hold the invited address, verified. The invitation stays pending.
            held = await uow.identity.find_verified_identifiers(command.identity_id)
            if invitation.email not in {login.value for login in held}:
                raise InvitationForAnotherAddress
            await uow.identity.save_invitation(accepted)
            member = await uow.identity.find_membership(
                organization_id=invitation.organization_id, identity_id=command.identity_id
            )
            if member is None:
                await uow.identity.save_membership(
                    Membership(
                        organization_id=invitation.organization_id,
                        identity_id=command.identity_id,
                        created_at=now,
                    )
                )
            await uow.outbox.cancel_by_subject(
                subject_id=invitation.id, reason=FailureClass.CHALLENGE_CONSUMED
            )
            await uow.commit()
        self.telemetry.event(
            "identity.invitation.accepted",
            invitation_id=str(invitation.id),
            organization_id=str(invitation.organization_id),
            identity_id=str(command.identity_id),
        )
        return invitation.organization_id
