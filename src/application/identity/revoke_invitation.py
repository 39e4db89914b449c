"""Revoke an invitation: its token stops working and its unsent message is withdrawn."""

from __future__ import annotations

from uuid import UUID

import attrs

from outbox.application.identity.errors import InvitationNotPending, NotFound
from outbox.application.identity.permissions import require_permission
from outbox.application.identity.ports import IdentityTransactions
from outbox.application.ports import Clock, Telemetry
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.identity.errors import TokenNotUsable


@attrs.frozen(kw_only=True)
class RevokeInvitationCommand:
    """Who revokes, and which invitation of which organization."""

    identity_id: UUID
    organization_id: UUID
    invitation_id: UUID


@attrs.frozen(kw_only=True)
class RevokeInvitation:
    """Marks the invitation revoked and dead-letters its unsent message (``invitation_revoked``),
    fencing a worker that holds it."""

    transactions: IdentityTransactions
    clock: Clock
    telemetry: Telemetry

    async def __call__(self, command: RevokeInvitationCommand) -> None:
        """Revoke; raises MissingPermission, NotFound or InvitationNotPending."""
        now = self.clock.now()
        async with self.transactions.begin() as uow:
            await require_permission(
                uow.identity,
                organization_id=command.organization_id,
                identity_id=command.identity_id,
            )
            invitation = await uow.identity.find_invitation(command.invitation_id)
            if invitation is None or invitation.organization_id != command.organization_id:
                raise NotFound
            try:
                revoked = invitation.revoke(now)
            except TokenNotUsable:
                raise InvitationNotPending from None
            await uow.identity.save_invitation(revoked)
            withdrawn = await uow.outbox.cancel_by_subject(
                subject_id=invitation.id, reason=FailureClass.INVITATION_REVOKED
            )
            await uow.commit()
        self.telemetry.event(
            "identity.invitation.revoked",
            invitation_id=str(invitation.id),
            organization_id=str(command.organization_id),
            messages_withdrawn=withdrawn,
        )
