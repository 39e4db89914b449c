"""POST /organizations, and invitations under one organization."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from litestar import Controller, delete, post
from litestar.params import JSONBody, Parameter
from litestar.status_codes import HTTP_201_CREATED, HTTP_204_NO_CONTENT

from outbox.application.identity.create_organization import CreateOrganizationCommand
from outbox.application.identity.invite_member import InviteMemberCommand
from outbox.application.identity.revoke_invitation import RevokeInvitationCommand
from outbox.entrypoints.http.caller import SECURITY, Caller, ClientAddress, Services
from outbox.entrypoints.http.problems import responses
from outbox.entrypoints.http.schemas import (
    InvitationCreated,
    InvitationRequest,
    OrganizationCreated,
    OrganizationRequest,
)

OrganizationId = Annotated[UUID, Parameter(description="The organization's id.")]
InvitationId = Annotated[UUID, Parameter(description="The invitation's id.")]


class OrganizationController(Controller):
    """Organizations and the invitations they send."""

    path = "/organizations"
    tags = ["organizations"]  # noqa: RUF012 - Litestar reads a class attribute
    security = SECURITY

    @post(
        "/",
        status_code=HTTP_201_CREATED,
        summary="Create an organization; its creator may manage its accounts",
        description=(
            "The name (1 to 100 characters) may carry no link, host name, email address or"
            " control character: it travels into invitation mail. Limited per account (429)."
        ),
        responses=responses(
            "validation-error", "unauthenticated", "rate-limited", "service-unavailable"
        ),
    )
    async def create(
        self, data: JSONBody[OrganizationRequest], services: Services, principal: Caller
    ) -> OrganizationCreated:
        """Create the organization."""
        organization = await services.create_organization(
            CreateOrganizationCommand(identity_id=principal.identity_id, name=data.name)
        )
        return OrganizationCreated(id=organization.id, name=organization.name)

    @post(
        "/{organization_id:uuid}/invitations",
        status_code=HTTP_201_CREATED,
        summary="Invite an email address; the token travels only by email",
        description=(
            "Needs organization.account.manage. Inviting a pending address again reissues: the"
            " old invitation is revoked and its unsent message withdrawn. Limits: pending"
            " invitations per organization (409), sends per organization and per address (429)."
        ),
        responses=responses(
            "validation-error",
            "unauthenticated",
            "permission-required",
            "not-found",
            "invitation-limit-reached",
            "conflict",
            "rate-limited",
            "service-unavailable",
        ),
    )
    async def invite(
        self,
        organization_id: OrganizationId,
        data: JSONBody[InvitationRequest],
        services: Services,
        client: ClientAddress,
        principal: Caller,
    ) -> InvitationCreated:
        """Issue an invitation."""
        receipt = await services.invite_member(
            InviteMemberCommand(
                identity_id=principal.identity_id,
                organization_id=organization_id,
                email=data.email,
                client_address=client,
            )
        )
        return InvitationCreated(id=receipt.invitation_id, expires_at=receipt.expires_at)

    @delete(
        "/{organization_id:uuid}/invitations/{invitation_id:uuid}",
        status_code=HTTP_204_NO_CONTENT,
        summary="Revoke an invitation; its unsent message is withdrawn",
        responses=responses(
            "validation-error",
            "unauthenticated",
            "permission-required",
            "not-found",
            "invitation-not-pending",
            "service-unavailable",
        ),
    )
    async def revoke(
        self,
        organization_id: OrganizationId,
        invitation_id: InvitationId,
        services: Services,
        principal: Caller,
    ) -> None:
        """Revoke the invitation."""
        await services.revoke_invitation(
            RevokeInvitationCommand(
                identity_id=principal.identity_id,
                organization_id=organization_id,
                invitation_id=invitation_id,
            )
        )
