"""POST /invitations/acceptances: a signed-in caller joins with the token from the link."""

from __future__ import annotations

from litestar import Controller, post
from litestar.params import JSONBody
from litestar.status_codes import HTTP_201_CREATED

from outbox.application.identity.accept_invitation import AcceptInvitationCommand
from outbox.entrypoints.http.caller import SECURITY, Caller, ClientAddress, Services
from outbox.entrypoints.http.problems import responses
from outbox.entrypoints.http.schemas import InvitationAccepted, TokenRequest


class InvitationController(Controller):
    """Invitation acceptances: single-use, expiring tokens."""

    path = "/invitations"
    tags = ["organizations"]  # noqa: RUF012 - Litestar reads a class attribute
    security = SECURITY

    @post(
        "/acceptances",
        status_code=HTTP_201_CREATED,
        summary="Accept an invitation",
        description="Only an account holding the invited address, verified, may accept.",
        responses=responses(
            "validation-error",
            "unauthenticated",
            "invalid-token",
            "invitation-for-another-address",
            "rate-limited",
            "conflict",
            "service-unavailable",
        ),
    )
    async def accept(
        self,
        data: JSONBody[TokenRequest],
        services: Services,
        client: ClientAddress,
        principal: Caller,
    ) -> InvitationAccepted:
        """Join the organization."""
        organization_id = await services.accept_invitation(
            AcceptInvitationCommand(
                identity_id=principal.identity_id, token=data.token, client_address=client
            )
        )
        return InvitationAccepted(organization_id=organization_id)
