"""Invite an email address to an organization: the invitation and its sealed token commit
together, within the limits on pending invitations and on sends per organization and address."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import attrs

from application.identity.errors import InvitationLimitReached
from application.identity.inputs import parse_email
from application.identity.permissions import require_permission
from application.identity.ports import IdentityTransactions, IdentityUnitOfWork
from application.identity.request_limits import RequestLimits
from application.ports import Clock, Ids, Sealer, SecretSource, Telemetry
from domain.channels import Channel
from domain.destinations import mask
from domain.identity.invitations import Invitation, InvitationLimits
from domain.identity.organizations import Organization
from domain.identity.tokens import token_digest
from domain.outbox.failures import FailureClass
from domain.outbox.messages import Message
from domain.purposes import Purpose

ROUTE = "invitations"


@attrs.frozen(kw_only=True)
class InviteMemberCommand:
    """Who invites, into which organization, and which address."""

    identity_id: UUID
    organization_id: UUID
    email: str = attrs.field(repr=False)
    client_address: str = attrs.field(repr=False)


@attrs.frozen(kw_only=True)
class InvitationReceipt:
    """The new invitation's id and expiry; the token goes only into the message."""

    invitation_id: UUID
    expires_at: datetime


@attrs.frozen(kw_only=True)
class InviteMember:
    """Issues an invitation; a pending one for the same address is revoked first (a reissue),
    its unsent message withdrawn (``invitation_revoked``)."""

    transactions: IdentityTransactions
    secrets: SecretSource
    sealer: Sealer
    limits: RequestLimits
    clock: Clock
    ids: Ids
    telemetry: Telemetry
    invitation_limits: InvitationLimits = attrs.field(factory=InvitationLimits)
    locale: str = "en"

    async def __call__(self, command: InviteMemberCommand) -> InvitationReceipt:
        """Invite; raises InvalidField, MissingPermission, NotFound, RateLimited or
        InvitationLimitReached."""
        email = parse_email(command.email).value
        now = self.clock.now()
        await self.limits.client(ROUTE, command.client_address, now)
        async with self.transactions.begin() as uow:
            organization = await require_permission(
                uow.identity,
                organization_id=command.organization_id,
                identity_id=command.identity_id,
            )
            policy = self.limits.policy
            org_key = f"invitations|organization|{organization.id}"
            await self.limits.enforce(policy.invitations_per_organization, org_key, now)
            await self.limits.enforce(policy.invitations_per_address, f"invitations|{email}", now)
            await self._withdraw_pending(uow, organization.id, email, now)
            pending = await uow.identity.count_pending_invitations(
                organization_id=organization.id, now=now
            )
            if pending >= self.invitation_limits.pending_per_organization:
                raise InvitationLimitReached
            token = self.secrets.token()
            invitation = Invitation.issue(
                id=self.ids.new_id(),
                organization_id=organization.id,
                email=email,
                token_digest=token_digest(token),
                invited_by=command.identity_id,
                now=now,
                lifetime=self.invitation_limits.lifetime,
            )
            await uow.identity.save_invitation(invitation)
            await uow.outbox.enqueue(self._message(invitation, organization, token, now))
            await uow.commit()
        self.telemetry.event(
            "identity.invitation.issued",
            invitation_id=str(invitation.id),
            organization_id=str(organization.id),
            destination=mask(email),
        )
        return InvitationReceipt(invitation_id=invitation.id, expires_at=invitation.expires_at)

    async def _withdraw_pending(
        self, uow: IdentityUnitOfWork, organization_id: UUID, email: str, now: datetime
    ) -> None:
        """Revoke a pending invitation of the same address (a reissue) and its unsent message."""
        previous = await uow.identity.find_pending_invitation(
            organization_id=organization_id, email=email
        )
        if previous is None:
            return
        await uow.identity.save_invitation(previous.revoke(now))
        await uow.outbox.cancel_by_subject(
            subject_id=previous.id, reason=FailureClass.INVITATION_REVOKED
        )
        self.telemetry.event(
            "identity.invitation.reissued",
            invitation_id=str(previous.id),
            organization_id=str(organization_id),
        )

    def _message(
        self, invitation: Invitation, organization: Organization, token: str, now: datetime
    ) -> Message:
        message_id = self.ids.new_id()
        return Message.enqueue(
            id=message_id,
            purpose=Purpose.INVITATION,
            channel=Channel.EMAIL,
            destination=invitation.email,
            subject_id=invitation.id,
            template=Purpose.INVITATION.value,
            params={"organization_name": organization.name},
            locale=self.locale,
            sealed_secret=self.sealer.seal(
                message_id=message_id, purpose=Purpose.INVITATION, plaintext=token
            ),
            expires_at=invitation.expires_at,
            now=now,
        )
