"""POST /sign-in-methods and /sign-in-methods/confirmations, signed in."""

from __future__ import annotations

from litestar import Controller, post
from litestar.params import JSONBody
from litestar.status_codes import HTTP_201_CREATED, HTTP_204_NO_CONTENT

from outbox.application.identity.confirm_sign_in_method import ConfirmSignInMethodCommand
from outbox.application.identity.request_sign_in_method import RequestSignInMethodCommand
from outbox.entrypoints.http.caller import SECURITY, Caller, ClientAddress, ElevationToken, Services
from outbox.entrypoints.http.problems import responses
from outbox.entrypoints.http.schemas import (
    ChallengeAccepted,
    ConfirmationRequest,
    SignInMethodRequest,
)


class SignInMethodController(Controller):
    """Sign-in methods: add an email address or phone number to the signed-in identity."""

    path = "/sign-in-methods"
    tags = ["sign-in-methods"]  # noqa: RUF012 - Litestar reads a class attribute
    security = SECURITY

    @post(
        "/",
        status_code=HTTP_201_CREATED,
        summary="Add a sign-in method; a code is queued for it",
        description=(
            "Needs a fresh step-up of this session (Elevation-Token), so a stolen bearer token"
            " alone cannot attach its thief's address. Once confirmed, every identifier the"
            " account had verified gets a security notice."
        ),
        responses=responses(
            "validation-error",
            "unauthenticated",
            "step-up-required",
            "rate-limited",
            "conflict",
            "service-unavailable",
        ),
    )
    async def request(
        self,
        data: JSONBody[SignInMethodRequest],
        services: Services,
        client: ClientAddress,
        principal: Caller,
        elevation_token: ElevationToken = None,
    ) -> ChallengeAccepted:
        """Open or resend the challenge."""
        receipt = await services.request_sign_in_method(
            RequestSignInMethodCommand(
                principal=principal,
                elevation_token=elevation_token,
                identifier=data.identifier,
                client_address=client,
            )
        )
        return ChallengeAccepted(challenge_expires_at=receipt.challenge_expires_at)

    @post(
        "/confirmations",
        status_code=HTTP_204_NO_CONTENT,
        summary="Confirm the new sign-in method with its code",
        responses=responses(
            "validation-error",
            "unauthenticated",
            "invalid-code",
            "identifier-taken",
            "rate-limited",
            "conflict",
            "service-unavailable",
        ),
    )
    async def confirm(
        self,
        data: JSONBody[ConfirmationRequest],
        services: Services,
        client: ClientAddress,
        principal: Caller,
    ) -> None:
        """Attach the identifier, verified."""
        await services.confirm_sign_in_method(
            ConfirmSignInMethodCommand(
                identity_id=principal.identity_id,
                identifier=data.identifier,
                code=data.code,
                client_address=client,
            )
        )
