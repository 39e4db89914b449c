"""Invite an email address to an organization: the invitation and its sealed token commit
together, within the limits on pending invitations and on sends per organization and per
(organization, address), all checked in SQL under the organization's lock."""

from __future__ import annotations

from datetime import datetime, timedelta
from uuid import UUID

import attrs

from outbox.application.identity.errors import (
    InvitationLimitReached,
    MissingPermission,
    RateLimited,
)
from outbox.application.identity.inputs import parse_email
from outbox.application.identity.permissions import require_permission
from outbox.application.identity.ports import IdentityTransactions
from outbox.application.identity.request_limits import RequestLimits
from outbox.application.ports import Clock, Ids, Sealer, SecretSource, Telemetry
from outbox.domain.channels import Channel
from outbox.domain.delivery.messages import Message
from outbox.domain.destinations import mask
from outbox.domain.identity.invitations import (
    Invitation,
    InvitationLimits,
    InvitationOutcome,
    InvitationRefusal,
)
from outbox.domain.identity.organizations import Organization, Permission
from outbox.domain.identity.tokens import token_digest
from outbox.domain.purposes import Purpose

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
            # Answers a stranger and an unknown organization alike, and names the
            # organization for the message; the SQL checks the permission again under its lock.
            organization = await require_permission(
                uow.identity,
                organization_id=command.organization_id,
                identity_id=command.identity_id,
            )
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
            policy = self.limits.policy
            outcome = await uow.identity.enqueue_invitation(
                invitation=invitation,
                message=self._message(invitation, organization, token, now),
                pending_max=self.invitation_limits.pending_per_organization,
                per_organization=policy.invitations_per_organization,
                per_address=policy.invitations_per_address,
            )
            _raise_for(outcome)
            await uow.commit()
        if outcome.withdrawn is not None:
            self.telemetry.event(
                "identity.invitation.reissued",
                invitation_id=str(outcome.withdrawn),
                organization_id=str(organization.id),
            )
        self.telemetry.event(
            "identity.invitation.issued",
            invitation_id=str(invitation.id),
            organization_id=str(organization.id),
            destination=mask(email),
        )
        return InvitationReceipt(invitation_id=invitation.id, expires_at=invitation.expires_at)

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


def _raise_for(outcome: InvitationOutcome) -> None:
    """The application error of a refused invitation; nothing for an issued one."""
    match outcome.refusal:
        case None:
            return
        case InvitationRefusal.PERMISSION:
            raise MissingPermission(Permission.MANAGE_ACCOUNT.value)
        case InvitationRefusal.PENDING_LIMIT:
            raise InvitationLimitReached
        case InvitationRefusal.ORGANIZATION_RATE | InvitationRefusal.ADDRESS_RATE:
            raise RateLimited(outcome.retry_after or timedelta(seconds=1))
