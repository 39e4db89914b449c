"""POST /magic-links and /magic-links/redemptions."""

from __future__ import annotations

from litestar import Controller, post
from litestar.params import JSONBody
from litestar.status_codes import HTTP_201_CREATED

from outbox.application.identity.redeem_magic_link import RedeemMagicLinkCommand
from outbox.application.identity.request_magic_link import RequestMagicLinkCommand
from outbox.entrypoints.http.caller import ClientAddress, Services
from outbox.entrypoints.http.problems import responses
from outbox.entrypoints.http.schemas import (
    ChallengeAccepted,
    MagicLinkRequest,
    SessionCreated,
    TokenRequest,
)


class MagicLinkController(Controller):
    """Magic links, indistinguishable for known and unknown email addresses."""

    path = "/magic-links"
    tags = ["magic-links"]  # noqa: RUF012 - Litestar reads a class attribute

    @post(
        "/",
        status_code=HTTP_201_CREATED,
        summary="Ask for a sign-in link by email",
        description=(
            "Same anti-enumeration contract as password recovery: one answer for every address;"
            " failures after the lookup are hidden and logged; the per-destination limit is silent."
        ),
        responses=responses("validation-error", "rate-limited", "service-unavailable"),
    )
    async def request(
        self, data: JSONBody[MagicLinkRequest], services: Services, client: ClientAddress
    ) -> ChallengeAccepted:
        """Issue or resend a link if the address is an account."""
        receipt = await services.request_magic_link(
            RequestMagicLinkCommand(email=data.email, client_address=client)
        )
        return ChallengeAccepted(challenge_expires_at=receipt.challenge_expires_at)

    @post(
        "/redemptions",
        status_code=HTTP_201_CREATED,
        summary="Redeem a link's token for a session",
        responses=responses(
            "validation-error", "invalid-token", "rate-limited", "conflict", "service-unavailable"
        ),
    )
    async def redeem(
        self, data: JSONBody[TokenRequest], services: Services, client: ClientAddress
    ) -> SessionCreated:
        """Start a session."""
        grant = await services.redeem_magic_link(
            RedeemMagicLinkCommand(token=data.token, client_address=client)
        )
        return SessionCreated(token=grant.token, expires_at=grant.expires_at)
